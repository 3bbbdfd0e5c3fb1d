"""Each defect of the verdicts, shown on the real public runs of the corpus (tests/data/runs).

Missing values are not non-finite ones; GPU verdicts read the run's own GPUs; every histogram
encoding is read; why a run ended is read from its console; overfitting is seen with its
evidence; a loss stuck from its first steps is an engineering suspect first.
"""

from __future__ import annotations

import dataclasses
import json
import zipfile

import numpy as np
import pytest

from incidents.diagnosis import diagnose, signals
from incidents.evidence.wandb import load_run
from tests.helpers.corpus import archive


@pytest.fixture(scope="module")
def runs():
    """Corpus runs by name, each read once for the module."""
    cache: dict = {}

    def get(name: str):
        if name not in cache:
            cache[name] = load_run(archive(name))
        return cache[name]
    return get


def _rules(run) -> dict:
    return {f.rule: f for f in diagnose(run)}


# -- 1. a missing value is not a non-finite value ----------------------------------------------------

@pytest.mark.parametrize("name, column", [("roberta-task-keys-0.17", "Train_Loss/Task0"),
                                          ("fineweb-8xh100-0.25", "train/loss"),
                                          ("hf-gpt2-eval-0.13", "train/loss")])
def test_a_last_row_of_evaluation_keys_is_not_a_non_finite_loss(runs, name, column):
    run = runs(name)
    assert np.isnan(run.history[column].iloc[-1])            # the last row did not log the training loss
    assert signals.loss_column(run.history) == column and run.nonfinite == {}
    exploding = _rules(run)["exploding_gradients"]
    assert not exploding.fired and exploding.evidence.get("non_finite_loss_step") is None


def test_a_loss_that_went_nan_once_and_came_back_is_not_a_divergence(runs):
    run = runs("newsrec-nan-first-step-0.15")
    assert run.nonfinite["loss"] == {"first_step": 0, "last_step": 0, "count": 1, "from_step": None}
    exploding = _rules(run)["exploding_gradients"]
    assert not exploding.fired and "finite again after: not a divergence" in exploding.verdict


def test_a_loss_that_stays_nan_is_exploding_from_the_step_it_never_recovered(runs):
    exploding = _rules(runs("unet-nan-interrupted-0.13"))["exploding_gradients"]
    assert exploding.fired and exploding.evidence["non_finite_loss_step"] == 102
    assert "became non-finite at step 102 and never recovered (first non-finite at step 78)" in exploding.verdict


def test_evidence_stored_before_readers_recorded_logged_values_counts_only_infinities(runs):
    run = dataclasses.replace(runs("fineweb-8xh100-0.25"), nonfinite=None)
    assert not _rules(run)["exploding_gradients"].fired
    history = run.history.copy()
    history.iloc[-3, history.columns.get_loc("train/loss")] = np.inf
    assert _rules(dataclasses.replace(run, history=history))["exploding_gradients"].fired


def test_sdk_written_run_of_200_steps_and_one_val_loss_row_is_not_exploding(tmp_path):
    """The issue's own reproduction, written by the installed SDK."""
    pytest.importorskip("wandb")
    from tests.helpers.wandb_runs import offline_wandb, run_folder, sdk_run

    with offline_wandb(tmp_path):
        with sdk_run(tmp_path, "eval-tail", {"epochs": 1}) as run:
            for step in range(200):
                run.log({"train_loss": 2.0 * 0.99 ** step})
            run.log({"val/loss": 1.1})
        folder = run_folder(run)
    loaded = load_run(folder)
    assert np.isnan(loaded.history["train_loss"].iloc[-1]) and loaded.nonfinite == {}
    found = _rules(loaded)
    assert not found["exploding_gradients"].fired and not found["clean_but_stuck"].fired


# -- 2. the GPUs the run used --------------------------------------------------------------------------

def test_one_gpu_of_a_seven_gpu_node_is_judged_on_its_own_samples(runs):
    run = runs("reversal-gpu2-of-7-0.16")
    node = signals.gpu_utilisation(run.system, history=run.history)
    assert 40 < node < 50                                      # the node's mean would call it under-used
    found = _rules(run)
    ev = found["input_bound"].evidence
    assert ev["gpus"] == [2] and ev["gpu_attribution"] == "process" and 60 < ev["gpu_util_mean"] < 63
    assert not found["input_bound"].fired and not found["input_bound"].undetermined
    assert "gpu.process keys" in ev["gpu_util_source"] and not found["gpu_underused"].fired


def test_the_only_gpu_holding_memory_is_the_runs(runs):
    found = _rules(runs("eeg-watch-all-0.19"))
    assert found["model_not_on_gpu"].evidence["gpus"] == [0] and not found["model_not_on_gpu"].fired
    assert "the only GPU of the node holding memory" in found["gpu_underused"].evidence["gpu_util_source"]
    assert found["gpu_underused"].fired and "126,930-parameter model" in found["gpu_underused"].verdict


def test_gpus_holding_memory_that_disagree_leave_the_attribution_undetermined(runs):
    found = _rules(runs("qwen-sft-8gpu-oom-0.21"))
    for rule in ("input_bound", "gpu_underused"):
        f = found[rule]
        assert f.undetermined and f.verdict.startswith("Which of the node's GPUs this run used is not determined")
        assert f.evidence["gpus"] == [0, 3, 4, 5, 6, 7] and "gpu.process" in f.evidence["would_decide"][0]
    assert not found["model_not_on_gpu"].fired


def test_gpus_holding_memory_that_agree_give_the_verdict_whichever_are_the_runs(runs):
    found = _rules(runs("unlearning-10gpu-crash-0.18"))
    ev = found["input_bound"].evidence
    assert ev["gpu_attribution"] == "agree" and ev["gpus"] == [3, 5, 7] and ev["gpu_util_mean"] > 80
    assert not found["input_bound"].fired and not found["input_bound"].undetermined


def test_idle_gpus_of_a_cpu_run_are_named_idle(runs):
    placed = _rules(runs("a2c-nan-crash-0.8"))["model_not_on_gpu"]
    assert placed.fired and placed.verdict.startswith("The model is not on the GPU: 2 GPUs sat idle")


# -- 3. every histogram encoding ----------------------------------------------------------------------------

def test_hand_logged_histograms_of_wandb_0_13_are_read(runs):
    run = runs("unet-handlogged-interrupted-0.13")
    counts = run.histogram_counts
    assert counts["logged_gradients"] == counts["logged_parameters"] == 256      # 64 tensors at the 4 kept steps
    assert not any("Gradients/" in w and "non-numeric" in w for w in run.warnings)
    found = _rules(run)
    assert "hand-logged histograms (Gradients/*, Weights/*)" in found["exploding_gradients"].evidence["source"]
    assert not found["exploding_gradients"].verdict.startswith("Not checked")
    assert found["static_parameters"].evidence["checked_tensors"] == 64


@pytest.mark.parametrize("name, kind, tensors", [("ndt-6gpu-watch-crash-0.12", "gradients", 53),
                                                 ("eeg-watch-all-0.19", "parameters", 40),
                                                 ("mnist-watch-interrupted-0.8", "gradients", 10)])
def test_watch_histograms_are_read_in_every_sdk_form(runs, name, kind, tensors):
    """0.12 writes one JSON item per key, 0.19 three nested items, 0.8 a JSON object per line."""
    h = runs(name).histograms
    mine = h[h["kind"] == kind]
    assert mine["tensor"].nunique() == tensors
    assert all(len(b) == len(c) + 1 for b, c in zip(mine["bins"], mine["counts"], strict=True))


def test_an_export_with_packed_bins_and_nested_keys_reads_like_the_run(runs, tmp_path):
    """An API export (run.history()) writes histograms with the server's packedBins."""
    run = runs("mnist-watch-interrupted-0.8")
    rows = []
    for step, frame in run.histograms.groupby("step"):
        row = {"_step": int(step), "loss": float(run.history["loss"].get(step, 0.5))}
        for tensor, bins, counts in zip(frame["tensor"], frame["bins"], frame["counts"], strict=True):
            packed = {"min": float(bins[0]), "size": float((bins[-1] - bins[0]) / (len(bins) - 1)), "count": len(counts)}
            row.setdefault("gradients", {})[tensor] = {"_type": "histogram", "values": counts.tolist(),
                                                       "packedBins": packed}
        rows.append(row)
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    exported = load_run(path)
    assert len(exported.histograms) == len(run.histograms)
    a = exported.histograms.sort_values(["step", "tensor"]).reset_index(drop=True)
    b = run.histograms.sort_values(["step", "tensor"]).reset_index(drop=True)
    assert list(a["key"]) == list(b["key"]) and set(a["kind"]) == {"gradients"}
    for x, y in zip(a["bins"], b["bins"], strict=True):
        assert np.allclose(x, y, rtol=1e-6, atol=1e-6 * float(np.abs(y).max()))   # float32 edges of wandb.watch


# -- 4. why a run ended --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, shown", [
    ("tictactoe-save-crash-0.8", ["FileNotFoundError", "pytorch_ai.py line 151", "`torch.save(net, './nets/gpunets/net_'",
                                  "Cause: missing file or directory", "os.makedirs"]),
    ("reversal-checkpoint-crash-0.16", ["RuntimeError: File", "train.py line 130", "Cause: missing file or directory"]),
    ("mae-device-crash-0.15", ["Expected all tensors to be on the same device", "method.py line 54",
                               "Cause: device mismatch", "evaluation batches included"]),
    ("mnist-device-crash-0.8", ["Expected object of device type cuda", "mnist_classifier.py line 34",
                                "Cause: device mismatch"]),
    ("imagenette-ddp-crash-0.10", ["TypeError: to() received an invalid combination", "train_ddp.py line 24",
                                   "Cause: error in the training code"]),
    ("qwen-sft-8gpu-oom-0.21", ["Crashed in epoch 0.549 of 3 planned (18%", "torch.OutOfMemoryError",
                                "Cause: out of GPU memory"]),
])
def test_a_crash_names_its_exception_the_users_line_and_the_cause(runs, name, shown):
    crash = _rules(runs(name))["crash"]
    assert crash.fired and crash.cls == "engineering" and crash.confidence == 0.9
    for text in shown:
        assert text in crash.verdict, (text, crash.verdict)


def test_a_crash_with_no_console_says_what_would_name_it(runs):
    crash = _rules(runs("vgg-kfac-crash-0.10"))["crash"]
    assert crash.fired and "No traceback was captured" in crash.verdict
    assert "output.log" in crash.evidence["would_decide"][0]


@pytest.mark.parametrize("name, exit_code", [("unet-handlogged-interrupted-0.13", 255),
                                             ("mae-graceful-interrupt-0.15", 0), ("vqvae-interrupted-0.19", None)])
def test_a_run_stopped_by_hand_is_interrupted_not_crashed(runs, name, exit_code):
    run = runs(name)
    assert run.ending["how"] == "interrupted" and run.ending["exit_code"] == exit_code
    crash = _rules(run)["crash"]
    assert not crash.fired and crash.verdict.startswith("Interrupted by hand")


def test_an_interrupted_run_still_improving_is_judged_on_what_ran(runs):
    run = runs("unet-handlogged-interrupted-0.13")
    assert signals.planned_share(run) == "in epoch 3 of 40 planned (10%, config epochs)"
    stuck = _rules(runs("ner-cpu-interrupted-0.12"))["clean_but_stuck"]
    assert not stuck.fired and "still making progress over the steps it logged" in stuck.verdict


def test_an_export_packed_with_its_console_reads_how_the_run_ended(runs, tmp_path):
    run = runs("tictactoe-save-crash-0.8")
    export = tmp_path / "export.zip"
    with zipfile.ZipFile(export, "w") as z:
        z.writestr("history.csv", run.history[["loss"]].reset_index().to_csv(index=False))
        with open(archive_member(tmp_path, "tictactoe-save-crash-0.8", "output.log"), encoding="utf-8") as f:
            z.writestr("output.log", f.read())
    loaded = load_run(export)
    assert loaded.kind == "history_export" and loaded.ending["how"] == "crashed"
    assert loaded.ending["exception"] == "FileNotFoundError" and loaded.ending["user_frame"]["line"] == 151


def archive_member(tmp_path, name: str, member: str):
    import tarfile

    with tarfile.open(archive(name)) as t:
        t.extract(member, tmp_path / name, filter="data")
    return tmp_path / name / member


# -- 5. overfitting ------------------------------------------------------------------------------------------

def test_overfitting_is_reported_with_the_turn_and_the_gap(runs):
    over = _rules(runs("ner-overfit-0.12"))["overfitting"]
    assert over.fired and over.cls == "research"
    ev = over.evidence
    assert ev["metric"] == "val_loss" and ev["train_metric"] == "train_loss" and ev["turn_step"] == 814
    assert ev["gap_end"] > 10 * ev["gap_at_turn"] > 0 and ev["rise_share"] > 1
    assert over.verdict.startswith("Overfitting from step 814: val_loss reached its best, 40.2, at step 814")
    assert "Keep the checkpoint from step 814" in over.verdict
    hf = _rules(runs("hf-gpt2-overfit-0.13"))["overfitting"]
    assert hf.fired and hf.evidence["turn_step"] == 15 and hf.evidence["train_metric"] == "train/loss"


@pytest.mark.parametrize("name", ["mae-lightning-2gpu-0.15", "mlp-val-0.8", "mnist-mlp-cpu-on-t4-0.25",
                                  "qwen-lora-sft-0.25", "fineweb-4xh100-0.25"])
def test_no_overfitting_while_the_held_out_loss_improves_or_holds_within_its_noise(runs, name):
    assert not _rules(runs(name))["overfitting"].fired


def test_a_held_out_loss_is_compared_with_the_training_loss_of_its_own_name(runs):
    """An unlearning run: the forget set's test loss is meant to rise with its training loss."""
    over = _rules(runs("unlearning-10gpu-crash-0.18"))["overfitting"]
    assert not over.fired and over.evidence["train_metric"] == "forget_train/it_coarse_loss"
    assert "did not keep falling" in over.verdict


# -- 6. stuck from the first steps ---------------------------------------------------------------------------

def test_a_loss_stuck_from_its_first_steps_is_an_engineering_suspect_first(runs):
    stuck = _rules(runs("seq2seq-rnn-stuck-0.13"))["clean_but_stuck"]
    assert stuck.fired and stuck.cls == "engineering"
    assert stuck.verdict.startswith("Stuck from the first steps, an engineering suspect before a research question")
    assert "cannot be compared with chance (ln K)" in stuck.verdict and "Likely a research question" not in stuck.verdict
    assert any("overfit one small batch" in d for d in stuck.evidence["would_decide"])


def test_chance_is_named_when_the_config_gives_the_outputs(runs):
    run = runs("seq2seq-rnn-stuck-0.13")
    at_chance = _rules(dataclasses.replace(run, config={**run.config, "vocab_size": 27}))["clean_but_stuck"]
    assert at_chance.fired and at_chance.cls == "engineering"
    assert at_chance.verdict.startswith("Stuck at chance from the first steps") and "ln 27 = 3.3" in at_chance.verdict
    below = _rules(dataclasses.replace(run, config={**run.config, "vocab_size": 5000}))["clean_but_stuck"]
    assert below.fired and below.cls == "research" and "below chance from the start" in below.verdict


def test_a_run_that_ended_early_is_not_called_stuck_on_a_short_flat_stretch(runs):
    stuck = _rules(runs("unlearning-10gpu-crash-0.18"))["clean_but_stuck"]
    assert stuck.undetermined and "Too short a run to call" in stuck.verdict
    sft = _rules(runs("qwen-sft-8gpu-oom-0.21"))["clean_but_stuck"]
    assert not sft.fired and "learned, then plateaued" in sft.verdict
