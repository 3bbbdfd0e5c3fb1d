"""The log entry generated from the reproducer's shipped sample, clause by clause, against its evidence."""

from __future__ import annotations

import json

import pytest

from incidents.evidence.sample_data import REPRO_TINY, repro_tiny_runs
from incidents.evidence.wandb import load_run
from incidents.writeups.report.build import build_incident_report
from incidents.writeups.report.inputs import ProfileInput, ReportInput, RunInput


@pytest.fixture(scope="module")
def sample():
    runs = {mode: load_run(path) for mode, path in repro_tiny_runs().items()}
    profile = json.loads((REPRO_TINY / "profile.json").read_text())
    return runs, profile


def _entry(runs, profile, **kw):
    inputs = ReportInput(title="training throughput investigation",
                         runs=(RunInput("incident", runs["watch:all:1"]), RunInput("baseline", runs["baseline"])),
                         profiles=(ProfileInput("profile.json", profile),), **kw)
    return build_incident_report(inputs).log_entry


def test_sample_log_entry_has_every_clause_the_evidence_supports(sample):
    runs, profile = sample
    paragraph, *rest = _entry(runs, profile).splitlines()
    watch = next(m for m in profile["modes"] if m["mode"] == "watch:all:1")
    base = next(m for m in profile["modes"] if m["mode"] == "baseline")
    # Under log="all" the costliest tensor costs both its halves: its gradient's and its parameter's histogram.
    name = watch["top_tensors"][0]["name"].split("/", 1)[1]
    grad, param = (next(t["mean_ms"] for t in watch["top_tensors"] if t["name"] == f"{kind}/{name}")
                   for kind in ("gradients", "parameters"))
    assert "BertForSequenceClassification (tiny preset)" in paragraph                     # model name
    assert "CPU AMD EPYC (2 cores, torch 1 thread)" in paragraph                          # hardware, cores, threads
    assert (f"costliest tensor {name} (3.9M elements) alone {grad + param:.1f} ms/step "
            f"(gradients {grad:.1f} + parameters {param:.1f})") in paragraph
    # Hook time as wall-clock time; this profile predates CPU-time measurement, and says so.
    assert (f"watch hooks {watch['mean_hook_ms']:.1f} ms/step of wall-clock time (CPU time not recorded; "
            "the verdict's share of step time is wall-clock)") in paragraph
    # Whole-run time is the history's training span (profiler capture and teardown left out), labelled.
    run = runs["watch:all:1"]
    times = run.history["_runtime"].dropna()
    span = times.iloc[-1] - times.iloc[0]
    assert span < run.runtime_s - 1                                     # the run's runtime includes more
    assert f"training span {span:.1f} s for {run.steps - 1} steps" in paragraph and "whole-run ratio" in paragraph
    assert f"actual {run.runtime_s:.1f} s" not in paragraph
    assert f"projected 11,250-step run: {base['projected_run_s'] / 60:.1f} min without watch" in paragraph
    assert "diagnosed 30 November 2026 by null-hypothesis test (training without wandb.watch()" in paragraph
    assert "no fixed run yet: the fixed run's runtime, GPU utilisation and final metric are not measured" \
        in paragraph
    # Every footnote number in the paragraph has its source line, and no time entries means no "0.0h".
    numbers = {int(n) for n in __import__("re").findall(r"\[(\d+)\]", paragraph)}
    footnotes = [line for line in rest if line.startswith("[")]
    assert len(footnotes) == len(numbers) == max(numbers)
    assert "profile.json · mode watch:all:1 top_tensors" in "\n".join(footnotes)
    assert "0.0h" not in paragraph and not paragraph.endswith("h.")


def test_log_entry_leaves_out_what_a_profile_of_another_setup_would_claim(sample):
    runs, profile = sample
    other = json.loads(json.dumps(profile))
    other["model"].update(preset="bert-base", parameter_tensors=201, parameters=109_483_778)
    paragraph = _entry(runs, other).splitlines()[0]
    assert "costliest tensor" not in paragraph and "of wall-clock time" not in paragraph
    assert "projected" not in paragraph and "bert-base" not in paragraph and "109M" not in paragraph
