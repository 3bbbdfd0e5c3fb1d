"""The metric a verdict is about is drawn: a collapsed run's held-out Dice is charted, not only told."""

from __future__ import annotations

import pytest

from incidents.writeups.report.build import build_incident_report
from incidents.writeups.report.inputs import ReportInput, RunInput
from tests.helpers.wandb_runs import load_run, offline_wandb

pytestmark = [pytest.mark.torch, pytest.mark.slow]


def test_the_collapsed_metric_of_a_collapsed_run_is_charted(tmp_path):
    torch = pytest.importorskip("torch")
    wandb = pytest.importorskip("wandb")
    # The same caused collapse the quality rule is tested on: dead ReLUs leave only a constant to learn.
    from tests.helpers.pathologies import collapsing_segmenter

    torch.set_num_threads(1)
    with offline_wandb(tmp_path):
        run = load_run(collapsing_segmenter(tmp_path))
        wandb.teardown()
    report = build_incident_report(ReportInput(title="Segmenter predicts background", runs=(RunInput("incident", run),)))
    collapse = next(f for f in report.fired if f.rule == "quality_collapse")
    chart = next(c for c in report.charts if c.title.startswith(collapse.evidence["metric"]))
    assert chart.title == "val/dice (quality collapse)" and chart.uri
    assert chart.source == f"{run.run_id} (unet-collapse) · history val/dice"
    loss = next(c for c in report.charts if c.title.startswith("Loss"))
    assert loss.title == "Loss curve"                     # one run: nothing is overlaid
