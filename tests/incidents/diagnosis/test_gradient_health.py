"""Gradient-health and research-question rules on real runs: tiny torch models, real wandb.watch.

Each pathology is caused in ``pathologies.py`` and read back through the W&B importer; the test
checks the intended rule fires (naming the right tensors and steps) and the others stay quiet.
"""

from __future__ import annotations

import pytest

from incidents.diagnosis import RULES, diagnose

# pathology_runs (session-scoped, ~4 s) would be made on each worker: one xdist group makes it once.
pytestmark = [pytest.mark.torch, pytest.mark.slow, pytest.mark.xdist_group("pathology_runs")]


def _by_rule(run):
    findings = diagnose(run)
    assert [f.rule for f in findings] == list(RULES)
    return {f.rule: f for f in findings}


def _fired(run) -> set[str]:
    return {rule for rule, f in _by_rule(run).items() if f.fired}


def test_exploding_run_fires_exploding_with_growing_tensors(pathology_runs):
    f = _by_rule(pathology_runs["exploding"])["exploding_gradients"]
    assert f.fired and f.cls == "engineering"
    assert f.evidence["growth_decades"] >= 1
    assert {t["tensor"] for t in f.evidence["tensors"]} >= {"branches.0.weight", "branches.1.weight"}
    assert all(t["to"] > 10 * t["from"] for t in f.evidence["tensors"])
    assert f.evidence["first_step"] < f.evidence["last_step"]
    # Each branch's weight and bias grow at the same rate (the same error drives both), so which
    # of them ranks first is a tie: the verdict must name the first-ranked tensor, whichever it is.
    top = f.evidence["tensors"][0]["tensor"]
    assert top.startswith("branches.") and f"largest: {top}" in f.verdict
    assert _fired(pathology_runs["exploding"]) == {"exploding_gradients"}


def test_nonfinite_loss_fires_exploding_naming_the_step(pathology_runs):
    run = pathology_runs["nonfinite"]
    f = _by_rule(run)["exploding_gradients"]
    assert f.fired and f.evidence["non_finite_loss_step"] is not None
    assert f"step {f.evidence['non_finite_loss_step']}" in f.verdict
    loss = run.history["loss"]
    assert loss.loc[:f.evidence["non_finite_loss_step"] - 1].notna().all()


def test_vanishing_run_names_early_layers(pathology_runs):
    f = _by_rule(pathology_runs["vanishing"])["vanishing_gradients"]
    assert f.fired and f.cls == "engineering"
    assert f.evidence["early_tensors"][0] == "0.weight"
    assert f.evidence["decades"] >= 3
    assert f.evidence["early_max_abs_grad"] < f.evidence["late_max_abs_grad"] / 1000
    assert _fired(pathology_runs["vanishing"]) == {"vanishing_gradients"}


def test_dead_layer_names_the_module_with_zero_gradients(pathology_runs):
    run = pathology_runs["dead_layer"]
    f = _by_rule(run)["dead_layer"]
    assert f.fired and f.evidence["modules"] == ["0"]
    assert set(f.evidence["tensors"]) == {"0.weight", "0.bias"}
    logged = sorted(run.histograms[run.histograms["kind"] == "gradients"]["step"].unique())
    assert f.evidence["steps"] == [logged[0], logged[-1]] and f.evidence["logged_steps"] == len(logged)
    assert "dead_layer" in _fired(run) and "clean_but_stuck" not in _fired(run)


def test_static_parameters_names_the_layer_left_out_of_the_optimizer(pathology_runs):
    f = _by_rule(pathology_runs["static"])["static_parameters"]
    assert f.fired and set(f.evidence["tensors"]) == {"2.weight", "2.bias"}
    assert _fired(pathology_runs["static"]) == {"static_parameters"}


def test_healthy_run_fires_nothing_and_every_rule_was_checked(pathology_runs):
    findings = diagnose(pathology_runs["healthy"])
    assert [f.fired for f in findings] == [False] * len(RULES)
    assert {f.cls for f in findings} == {"healthy"}
    stuck = {f.rule: f for f in findings}["clean_but_stuck"]
    assert stuck.evidence["relative_drop"] > 0.1


def test_a_loss_at_its_start_from_the_first_steps_is_an_engineering_suspect_before_a_research_question(
        pathology_runs):
    """Random labels: the loss never leaves its first value. Labels are one suspect among the
    engineering ones; the watch histograms clear frozen parameters, and the finding says what decides."""
    f = _by_rule(pathology_runs["stuck"])["clean_but_stuck"]
    assert f.fired and f.cls == "engineering"
    assert f.verdict.startswith("Stuck from the first steps, an engineering suspect before a research question")
    assert "labels misaligned with their inputs" in f.verdict and "learning rate of zero" in f.verdict
    assert "clears frozen parameters and a zero learning rate" in f.verdict
    assert any("shuffled labels" in d for d in f.evidence["would_decide"])
    assert abs(f.evidence["relative_drop"]) < 0.1
    assert _fired(pathology_runs["stuck"]) == {"clean_but_stuck"}


def test_findings_serialise_to_the_public_shape(pathology_runs):
    import json

    for run in pathology_runs.values():
        for f in diagnose(run):
            d = json.loads(json.dumps(f.to_dict()))
            assert set(d) == {"rule", "fired", "class", "verdict", "evidence", "confidence"}
            assert 0 <= d["confidence"] <= 1


def test_every_fired_rule_names_the_evidence_it_used_and_every_rule_says_checked_or_not(pathology_runs):
    for kind, run in pathology_runs.items():
        findings = diagnose(run)
        assert [f.rule for f in findings] == list(RULES)
        for f in findings:
            if f.fired:
                assert f.evidence["evidence_used"] and all(isinstance(s, str) and s for s in
                                                           f.evidence["evidence_used"]), (kind, f.rule)
            else:
                assert f.verdict, (kind, f.rule)
