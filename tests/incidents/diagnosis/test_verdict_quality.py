"""What training achieved, read as the evidence shows it (issue 20), on runs the W&B SDK writes here.

Each failure is caused, not faked: a segmentation net whose hidden ReLUs are dead from the start can
only learn a constant, so its held-out Dice collapses while its loss falls and its prediction images
stop changing; a net logging its own ``Gradients``/``Weights`` histograms leaves one layer out of
its optimizer; a sequence model whose decoder never sees the encoder learns the character
frequencies within a few steps and then nothing, in a run stopped by a real SIGINT; a 100-odd
parameter policy trains on the CPU of a GPU host.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from incidents.diagnosis import diagnose
from tests.helpers.gpu_host import add_gpu_host
from tests.helpers.pathologies import collapsing_segmenter
from tests.helpers.wandb_runs import closed_log, descend, load_run, offline_wandb, run_folder, sdk_run

# The module-scoped training runs are made once per worker: one xdist group keeps these tests on one worker.
pytestmark = [pytest.mark.torch, pytest.mark.slow, pytest.mark.xdist_group("verdict_quality")]
torch = pytest.importorskip("torch")
wandb = pytest.importorskip("wandb")
ROOT = Path(__file__).resolve().parents[3]


def _hand_logged_histograms(root: Path) -> Path:
    """A training loop that logs its own gradient and weight histograms, nested as
    ``{"Gradients": {name: Histogram}, "Weights": {...}}``; layer 2 is missing from the optimizer."""
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 4))
    frozen = {id(p) for p in model[2].parameters()}
    opt = torch.optim.Adam([p for p in model.parameters() if id(p) not in frozen], lr=1e-2)
    teacher = torch.randn(16, 4, generator=gen)
    with sdk_run(root, "hand-histograms", {"lr": 1e-2}, project="verdicts") as run:
        for step in range(40):
            x = torch.randn(64, 16, generator=gen)
            loss = torch.nn.functional.cross_entropy(model(x), (x @ teacher).argmax(1))
            opt.zero_grad()
            loss.backward()
            row = {"loss": loss.item()}
            if step % 4 == 3:
                row["Gradients"] = {n: wandb.Histogram(p.grad.numpy()) for n, p in model.named_parameters()}
                row["Weights"] = {n: wandb.Histogram(p.detach().numpy()) for n, p in model.named_parameters()}
            opt.step()
            run.log(row)
    return run_folder(run)


def _tiny_policy_on_gpu_host(root: Path) -> Path:
    """A small policy network on the CPU of a GPU host, logging RL metrics, its weights watched rarely."""
    torch.manual_seed(0)
    gen = np.random.default_rng(4)
    policy = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    opt = torch.optim.Adam(policy.parameters(), lr=1e-3)
    with sdk_run(root, "ppo-tiny", {"algo": "ppo", "device": "cpu"}, project="verdicts") as run:
        run.watch(policy, log="parameters", log_freq=100, idx=0)
        for step in range(300):
            loss = descend(opt, -policy(torch.randn(32, 4)).log_softmax(-1)[:, 0].mean())
            run.log({"losses/policy_loss": loss, "charts/episodic_return": 20 + step + gen.normal(0, 5)})
    return run_folder(run)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("quality")
    with offline_wandb(root):
        collapse = collapsing_segmenter(root)
        hand = _hand_logged_histograms(root)
        policy = _tiny_policy_on_gpu_host(root)
        add_gpu_host(policy, gpus=1, util=0.0, memory=1.0)
        wandb.teardown()
    return {"collapse": load_run(collapse), "hand": load_run(hand), "policy": load_run(policy)}


def _by_rule(findings):
    return {f.rule: f for f in findings}


def test_collapse_of_a_held_out_dice_is_an_engineering_verdict(runs):
    run = runs["collapse"]
    dice = run.history["val/dice"].dropna()
    assert dice.iloc[0] > 0.01 and dice.iloc[-1] < 1e-6                  # the collapse really happened
    assert run.media["val/prediction"]["count"] == 12
    found = _by_rule(diagnose(run))
    collapse = found["quality_collapse"]
    assert collapse.fired and collapse.cls == "engineering"
    assert collapse.verdict.startswith(f"Quality collapse: val/dice (held out, higher is better) fell from "
                                       f"{dice.max():.3g} at step {int(dice.idxmax())} to near zero")
    assert "while the training loss train/loss fell" in collapse.verdict
    same = run.media["val/prediction"]["same_at_end"]
    assert same >= 10 and f"the last {same} of the 12 images logged under val/prediction" in collapse.verdict
    assert "predicting a constant" in collapse.verdict
    assert any("media val/prediction" in e for e in collapse.evidence["evidence_used"])
    stuck = found["clean_but_stuck"]
    assert not stuck.fired and "quality_collapse" in stuck.verdict
    assert not any("training makes progress" in f.verdict for f in found.values())


def test_hand_logged_histograms_are_read_and_the_gradient_rules_run_on_them(runs):
    run = runs["hand"]
    assert run.histogram_counts["logged_gradients"] == run.histogram_counts["logged_parameters"] == 10 * 6
    assert not any("non-numeric" in w for w in run.warnings)
    assert any("60 of gradients, 60 of weights" in w for w in run.warnings)
    found = _by_rule(diagnose(run))
    static = found["static_parameters"]
    assert static.fired and static.evidence["tensors"] == ["2.bias", "2.weight"]
    assert static.evidence["source"] == f"{run.run_id} hand-logged histograms (Gradients/*, Weights/*), weights " \
                                        "and gradients"
    for rule in ("exploding_gradients", "vanishing_gradients", "dead_layer"):
        assert not found[rule].verdict.startswith("Not checked"), found[rule].verdict
    # Histograms logged by hand are not wandb.watch's: nothing blames watch for them.
    assert not found["watch_overhead"].fired and "No wandb.watch histograms" in found["watch_overhead"].verdict


def test_a_tiny_policy_on_a_gpu_host_is_told_the_cpu_is_right(runs):
    placed = _by_rule(diagnose(runs["policy"]))["model_not_on_gpu"]
    assert placed.fired
    assert "For a 114-parameter model the CPU is the right place" in placed.verdict
    assert "bound by its environment steps" in placed.verdict and "CPU-only host" in placed.verdict
    assert "model.to('cuda')" not in placed.verdict


CHILD = r'''
import os, sys
from pathlib import Path
out, marker = sys.argv[1], Path(sys.argv[2])
os.environ.update(WANDB_MODE="offline", WANDB_DIR=out, WANDB_SILENT="true", WANDB_DISABLE_GIT="true",
                  WANDB_CACHE_DIR=out + "/cache", WANDB_CONFIG_DIR=out + "/config", WANDB_DATA_DIR=out + "/data")
import torch, wandb
torch.set_num_threads(1)
torch.manual_seed(0)
V, L, B = 30, 12, 32
freq = torch.tensor([1 / (k + 1) for k in range(V)])
gen = torch.Generator().manual_seed(5)

class Seq2Seq(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(V, 32)
        self.enc = torch.nn.GRU(32, 32, batch_first=True)
        self.dec = torch.nn.GRU(32, 32, batch_first=True)
        self.out = torch.nn.Linear(32, V)

    def forward(self, src):
        _, h = self.enc(self.emb(src))
        # The bug: the decoder starts from zeros, so nothing of the input reaches it.
        o, _ = self.dec(torch.zeros(src.size(0), L, 32), torch.zeros_like(h))
        return self.out(o)

model = Seq2Seq()
opt = torch.optim.Adam(model.parameters(), lr=0.05)
run = wandb.init(project="verdicts", name="char-seq2seq", config={"vocab_size": V, "steps": 4000, "lr": 0.05})
for step in range(4000):
    src = torch.multinomial(freq, B * L, replacement=True, generator=gen).view(B, L)
    loss = torch.nn.functional.cross_entropy(model(src).reshape(-1, V), src.flip(1).reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    run.log({"loss": loss.item()})
    if step == 250:
        marker.touch()
run.finish()
'''


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    """The stuck sequence model, stopped by SIGINT (Ctrl-C) once it has logged 250 steps."""
    root = tmp_path_factory.mktemp("interrupted")
    marker = root / "logged-250"
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(root), str(marker)], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        while not marker.exists():
            assert child.poll() is None, child.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the child never logged 250 steps"
            time.sleep(0.1)
        child.send_signal(signal.SIGINT)
        child.wait(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    (folder,) = (root / "wandb").glob("offline-run-*")
    closed_log(folder)
    return load_run(folder)


def test_stuck_at_the_label_frequencies_from_the_start_is_called_wiring_not_research(interrupted):
    stuck = _by_rule(diagnose(interrupted))["clean_but_stuck"]
    assert stuck.fired and stuck.cls == "engineering"
    assert stuck.verdict.startswith("Stuck from the start, more likely wiring than a research question: loss fell "
                                    "from 3.")
    assert stuck.evidence["plateau_from_point"] <= 0.05 * interrupted.steps
    assert "uniform guessing over 30 outputs (config vocab_size) scores ln 30 = 3.4" in stuck.verdict
    assert "inputs reach the model (the decoder" in stuck.verdict and "learning rate" in stuck.verdict
    assert "research question, not a bug" not in stuck.verdict


def test_an_interrupted_run_says_so_in_the_diagnosis_and_on_the_first_page(interrupted):
    from incidents.writeups.report.build import build_incident_report
    from incidents.writeups.report.html import render_html
    from incidents.writeups.report.inputs import ReportInput, RunInput

    assert interrupted.ending["how"] == "interrupted" and interrupted.ending["exit_code"] == 255
    last = int(interrupted.history.index.max())
    said = f"was interrupted (Ctrl-C) at step {last:,} of 4,000 planned ({(last + 1) / 4000:.0%}, config steps)"
    assert said in _by_rule(diagnose(interrupted))["clean_but_stuck"].verdict
    report = build_incident_report(ReportInput(title="char model", runs=(RunInput("incident", interrupted),)))
    assert report.endings == [f"The incident run {interrupted.run_id} (char-seq2seq) {said}."]
    page = render_html(report)
    assert page.index(said) < page.index('aria-label="Key figures"')
