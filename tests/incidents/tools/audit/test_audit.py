"""``hourtab audit`` on training scripts read from disk (never run), through the real CLI."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from app.cli import cli
from incidents.tools.audit.models import KNOWN_MODELS
from tests.helpers.audit_cli import SCRIPTS, as_json, audit, by_rule, script


@pytest.fixture(autouse=True)
def empty_data_dir(tmp_path, monkeypatch):
    """No stored calibration unless a test writes one: the shipped default is used."""
    monkeypatch.setenv("HOURTAB_DATA_DIR", str(tmp_path / "data"))


def test_incident_pattern_is_flagged_with_a_fix_and_no_cpu_hours_for_a_gpu_run(tmp_path):
    result = audit(str(script(tmp_path, "incident_train")), "--json")
    assert result.exit_code == 1
    report = as_json(result)
    watch = by_rule(report)["wandb_watch"][0]
    assert watch["severity"] == "error" and watch["location"] == "train.py:24"
    assert watch["evidence"]["log"] == "all" and watch["evidence"]["log_freq"] == 1
    assert "argparse --log-freq default 1 (line 17)" == watch["evidence"]["log_freq_via"]
    assert "WATCH_LOG = 'all' (line 12)" == watch["evidence"]["log_via"]
    # from_pretrained("bert-base-uncased", num_labels=14): a 14-label head, and the source says so
    assert report["model"]["name"] == "bert-base-uncased" and report["model"]["tensors"] == 201
    assert report["model"]["parameters"] == KNOWN_MODELS["bert-base-uncased"].parameters + 12 * (768 + 1)
    assert "num_labels=14 (line 21)" in report["model"]["source"]
    # The script trains on CUDA and the shipped calibration is CPU-only: no hours as if it applied.
    assert watch["prediction"] is None
    assert "the calibration has no cuda figures (the CPU figures do not apply to a GPU run)" in \
        watch["evidence"]["prediction_unavailable"]
    assert " h over " not in watch["message"]
    assert '-    wandb.watch(model, log=WATCH_LOG, log_freq=args.log_freq)' in watch["diff"]
    assert '+    wandb.watch(model, log="gradients", log_freq=100)' in watch["diff"]
    assert set(by_rule(report)) == {"wandb_watch"}  # workers, .to(device), guarded .item(): nothing else


def test_text_output_names_the_line_the_cost_and_the_run_length(tmp_path):
    result = audit(str(script(tmp_path, "tiny_cpu")), "--run-steps", "1000")
    assert result.exit_code == 1
    assert "ERROR train.py:10  wandb.watch(log=\"all\", log_freq=1) on BertForSequenceClassification (4.4M " \
           "parameters, 41 tensors): predicted +" in result.output
    assert "over 1,000 steps" in result.output and "+run.watch(model, log=\"gradients\", log_freq=100)" \
        in result.output
    gpu = audit(str(script(tmp_path, "incident_train")))
    assert "cost not predicted: the script trains on cuda" in gpu.output and " h over " not in gpu.output


def test_gradients_every_100_steps_is_not_flagged(tmp_path):
    result = audit(str(script(tmp_path, "fixed_train")), "--json")
    assert result.exit_code == 0, result.output
    report = as_json(result)
    assert not report["flagged"]
    (watch,) = report["findings"]
    assert watch["severity"] == "info" and watch["evidence"]["log_freq"] == 100
    assert watch["prediction"] is None  # a CUDA script, and the shipped calibration is CPU-only
    cpu = tmp_path / "cpu.py"
    cpu.write_text((SCRIPTS / "tiny_cpu.py.txt").read_text().replace('log="all", log_freq=1', 'log="all", log_freq=100'))
    (watch,) = as_json(audit(str(cpu), "--json"))["findings"]
    assert watch["severity"] == "info"
    assert watch["prediction"]["per_step_s"] == pytest.approx(watch["prediction"]["per_logging_step_s"] / 100)


@pytest.mark.torch
def test_configuration_hidden_behind_variables(tmp_path):
    report = as_json(audit(str(script(tmp_path, "hidden_config")), "--json"))
    rules = by_rule(report)
    watch = rules["wandb_watch"][0]
    assert (watch["evidence"]["log"], watch["evidence"]["log_freq"]) == ("all", 1)
    assert watch["evidence"]["log_freq_via"] == "FREQ = 1 (line 12), default of environment variable 'WATCH_FREQ'"
    assert watch["location"] == "train.py:20"  # run.watch on the run wandb.init returned
    # BertConfig(hidden 128 via a constant, 4 * HIDDEN, layers from a dict): the tiny preset's model
    from incidents.tools.repro.model import PRESETS, build_model

    pytest.importorskip("transformers")
    model = build_model(PRESETS["tiny"], seed=0, device="meta")
    assert report["model"]["parameters"] == sum(p.numel() for p in model.parameters())
    assert report["model"]["tensors"] == len(list(model.parameters())) == 41
    assert rules["dataloader_workers"][0]["location"] == "train.py:21"
    assert "num_workers=4, pin_memory=True" in rules["dataloader_workers"][0]["diff"]
    assert rules["profiler_on"][0]["severity"] == "warn" and "schedule=torch.profiler.schedule(" \
        in rules["profiler_on"][0]["diff"]
    assert rules["sync_in_step"][0]["location"] == "train.py:25"
    assert rules["item_in_step"][0]["location"] == "train.py:27"
    assert "+            total += model(**batch).loss.detach()" in rules["item_in_step"][0]["diff"]
    assert rules["model_not_on_device"][0]["location"] == "train.py:18"


def test_params_override_and_unknown_models(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("import wandb\nmodel = make_model()\nwandb.watch(model, 'gradients', 'all', 10)\n")
    unknown = as_json(audit(str(path), "--json"))
    (watch,) = unknown["findings"]
    assert watch["severity"] == "warn" and "pass --params" in watch["message"] and watch["prediction"] is None
    known = as_json(audit(str(path), "--json", "--params", "50000000", "--tensors", "100"))
    (watch,) = known["findings"]
    assert watch["severity"] == "error" and watch["evidence"]["log_freq"] == 10
    assert known["model"]["source"] == "--params and --tensors"


def test_script_that_does_not_parse_exits_2_with_one_line(tmp_path):
    path = tmp_path / "train.py"
    path.write_text('import wandb\n\ndef main(:\n    wandb.watch(model, log="all", log_freq=1)\n')
    result = CliRunner().invoke(cli, ["audit", str(path)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == ["Error: train.py:3:10: does not parse: invalid syntax."]
    missing = CliRunner().invoke(cli, ["audit", str(tmp_path / "nope.py")])
    assert missing.exit_code == 2 and missing.output.strip() == "Error: nope.py: no such file."


def test_bad_calibration_file_exits_2(tmp_path):
    bad = tmp_path / "cal.json"
    bad.write_text('{"devices": {}}')
    result = CliRunner().invoke(cli, ["audit", str(script(tmp_path, "fixed_train")), "--calibration", str(bad)])
    assert result.exit_code == 2 and "not a calibration" in result.output and "Traceback" not in result.output


def test_model_placed_by_device_map_or_cuda_is_not_flagged(tmp_path):
    path = tmp_path / "train.py"
    path.write_text('import torch\nfrom transformers import AutoModel\n'
                    'model = AutoModel.from_pretrained("bert-base-uncased", device_map="auto")\n'
                    'other = AutoModel.from_pretrained("bert-base-uncased").cuda()\n')
    report = as_json(audit(str(path), "--json"))
    assert report["findings"] == [] and report["model"]["name"] == "bert-base-uncased"


def test_model_left_on_the_cpu_is_flagged_once(tmp_path):
    path = tmp_path / "train.py"
    path.write_text('import torch\nfrom transformers import AutoModel\n'
                    'moved = AutoModel.from_pretrained("bert-base-uncased").cuda()\n'
                    'model = AutoModel.from_pretrained("bert-base-uncased")\nx = torch.zeros(2).cuda()\n')
    result = audit(str(path), "--json")
    assert result.exit_code == 0  # a warn: below the default --fail-on error
    assert [f["rule"] for f in as_json(result)["findings"]] == ["model_not_on_device"]
    assert audit(str(path), "--fail-on", "warn").exit_code == 1


def test_null_bytes_are_refused_in_one_line(tmp_path):
    path = tmp_path / "train.py"
    path.write_bytes(b"import wandb\x00\n")
    result = CliRunner().invoke(cli, ["audit", str(path)])
    assert result.exit_code == 2 and result.output.count("\n") == 1 and result.output.startswith("Error: train.py: ")


def test_a_gpu_script_is_predicted_from_a_gpu_calibration(tmp_path):
    sizes = (1_024, 16_384, 262_144, 1_048_576, 2_359_296)

    def path(per_element_ns: float, per_tensor_us: float) -> dict:
        return {"per_element_ns": per_element_ns, "per_tensor_us": per_tensor_us,
                "samples": [{"numel": n, "seconds": per_element_ns * 1e-9 * n + per_tensor_us * 1e-6} for n in sizes]}

    calibration = tmp_path / "gpu.json"
    calibration.write_text(json.dumps({"provenance": "a GPU box", "devices": {
        "cpu": {"gradients": path(25, 600), "parameters": path(25, 600)},
        "cuda": {"gradients": path(0.05, 90), "parameters": path(0.4, 120)}}}))
    report = as_json(audit(str(script(tmp_path, "incident_train")), "--json", "--calibration", str(calibration)))
    watch = by_rule(report)["wandb_watch"][0]
    p = watch["prediction"]
    assert p["device"] == "cuda" and "prediction_unavailable" not in watch["evidence"]
    params, tensors = report["model"]["parameters"], report["model"]["tensors"]
    assert p["per_step_s"] == pytest.approx(params * (0.05 + 0.4) * 1e-9 + tensors * (90 + 120) * 1e-6)
    assert " h over 11,250 steps" in watch["message"]


LIGHTNING_ON_GPU = '''import lightning as L
from transformers import BertConfig, BertForSequenceClassification


class Lit(L.LightningModule):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def training_step(self, batch, batch_idx):
        return self.net(**batch).loss


net = BertForSequenceClassification(BertConfig(num_labels=2))
trainer = L.Trainer(accelerator="gpu", devices=1, max_epochs=1)
trainer.fit(Lit(net))
'''


def test_a_lightning_trainer_on_the_gpu_places_the_model_itself(tmp_path):
    """Trainer(accelerator="gpu") moves the LightningModule and what it holds: not "trains on the CPU"."""
    path = tmp_path / "train.py"
    path.write_text(LIGHTNING_ON_GPU)
    report = as_json(audit(str(path), "--json"))
    assert "model_not_on_device" not in by_rule(report) and report["model"]["parameters"] > 100e6
    path.write_text(LIGHTNING_ON_GPU.replace('trainer = L.Trainer(accelerator="gpu", devices=1, max_epochs=1)\n'
                                             'trainer.fit(Lit(net))\n', 'x = net.cuda if False else "cuda"\n'))
    assert "model_not_on_device" in by_rule(as_json(audit(str(path), "--json")))


def test_the_trainers_watch_frequency_says_it_comes_from_its_logging_steps(tmp_path):
    path = tmp_path / "train.py"
    path.write_text('import os\nfrom transformers import BertConfig, BertForSequenceClassification, Trainer, '
                    'TrainingArguments\n\nos.environ["WANDB_WATCH"] = "all"\n'
                    'model = BertForSequenceClassification(BertConfig(num_labels=2))\n'
                    'args = TrainingArguments(output_dir="out", report_to="wandb", logging_steps=10)\n'
                    'Trainer(model=model, args=args).train()\n')
    [watch] = by_rule(as_json(audit(str(path), "--json")))["wandb_watch"]
    assert watch["severity"] == "info"
    assert watch["message"].startswith('Trainer → wandb.watch(log="all", log_freq=100 = max(100, logging_steps=10), '
                                       "from the Trainer's logging steps)")
    assert "model_not_on_device" not in by_rule(as_json(audit(str(path), "--json")))
