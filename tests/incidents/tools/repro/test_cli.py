"""`hourtab repro` argument handling that needs no training (and works without torch)."""

import sys

import pytest

from tests.helpers.cli import run_cli


def test_missing_torch_names_the_repro_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", None)  # what `import torch` sees when it is not installed
    monkeypatch.setitem(sys.modules, "transformers", None)
    result = run_cli(["repro", "--preset", "tiny", "--out", str(tmp_path / "out")])
    assert result.exit_code == 1
    assert "repro extra" in result.output and "hourtab[repro]" in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args, fragment", [
    (["--modes", "watch:every:1"], "log must be one of gradients, parameters, all"),
    (["--modes", "wandb"], "allowed: baseline, watch:<gradients|parameters|all>:<freq>"),
    (["--steps", "0"], "--steps must be at least 1"),
    (["--hidden", "129"], "multiple of --heads"),
    (["--device", "tpu"], "--device must be auto, cpu or cuda"),
])
def test_bad_arguments_exit_2_and_write_nothing(tmp_path, args, fragment):
    result = run_cli(["repro", "--preset", "tiny", *args, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert fragment in result.output
    assert not (tmp_path / "out").exists()


def test_help_lists_the_interface():
    text = run_cli(["repro", "--help"]).output
    for option in ("--preset", "--steps", "--warmup", "--modes", "--out", "--device", "--layers", "--hidden",
                   "--heads", "--seq-len", "--batch-size", "--num-labels", "--project-steps"):
        assert option in text
    assert "inspect" in run_cli(["profile", "--help"]).output
