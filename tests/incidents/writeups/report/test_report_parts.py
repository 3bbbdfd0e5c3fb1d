"""Report parts as pure functions: Markdown sanitising, engagement hours, log entry form, cache keys."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd

from incidents.evidence.wandb.evidence import RunEvidence
from incidents.writeups.report import markdown
from incidents.writeups.report.build import build_incident_report
from incidents.writeups.report.inputs import EntryInput, ReportInput, RunInput
from incidents.writeups.report.report_pdf import cache_key


def test_markdown_keeps_formatting_and_drops_html_images_styles_and_bad_links():
    html = markdown.safe_html("# T\n**b** <script>alert(1)</script> <img src=file:///etc/passwd>\n"
                           "![i](http://127.0.0.1:1/x.png) [ok](https://example.com) [js](javascript:alert(1))\n"
                           '<span style="background:url(http://127.0.0.1:1/c)">s</span>')
    assert "<h3>T</h3>" in html and "<strong>b</strong>" in html
    assert "<script" not in html and "<img" not in html and "<span" not in html
    assert "&lt;script&gt;" in html
    assert 'href="https://example.com"' in html and "javascript:" not in html.split("[js]")[0]
    assert 'href="javascript' not in html


def _run(run_id: str, step_s: float, steps: int = 50) -> RunEvidence:
    history = pd.DataFrame({"_runtime": np.arange(1, steps + 1) * step_s,
                            "loss": np.linspace(2.0, 1.0, steps), "step_time_s": [step_s] * steps},
                           index=pd.Index(range(steps), name="_step"))
    return RunEvidence(run_id=run_id, name=run_id, project="acme", history=history, runtime_s=steps * step_s,
                       environment={"python": "CPython 3.11.7", "wandb": "0.31.0", "torch": "2.13.0"})


def _inputs(**kw) -> ReportInput:
    entries = (EntryInput(1, "investigation", dt.date(2026, 1, 5), 5400, "Profiled the run", "Acme ML"),
               EntryInput(2, "investigation", dt.date(2026, 1, 5), 1440, "Read the watch code", "Acme ML"),
               EntryInput(3, "code review", dt.date(2026, 1, 6), 1800, "Reviewed the PR", "Acme ML"))
    return ReportInput(title="slow training", runs=(RunInput("incident", _run("slow", 0.4), "a"),
                                                    RunInput("fixed", _run("quick", 0.1), "b")),
                       entries=entries, **kw)


def test_log_entry_has_the_reference_form_and_phase_lines():
    report = build_incident_report(_inputs(fix_after='wandb.watch(model, log="gradients", log_freq=100)'))
    head, *lines = report.log_entry.splitlines()
    assert head.startswith("Acme ML — slow training: wandb 0.31.0 • PyTorch 2.13.0 • Python 3.11")
    assert head.endswith("; 2.4h.")
    assert "4.00× slower than fixed (400.0 ms vs 100.0 ms, median) [1]" in head
    assert 'fix: wandb.watch(model, log="gradients", log_freq=100)' in head
    # 50 steps under log_freq=100: the fixed run's speed is not yet the fix's (no histogram was logged).
    assert ("fixed run, which never reached a logging step (50 steps logged, log_freq=100), so its step time "
            "leaves out the histograms the fix still logs: 4.9 s training span, 100.0 ms/step median") in head
    # No held-out metric: the outcome is a training-loss point, and says so.
    assert "same loss at the last step (a training-loss point, not a held-out metric): 1 at step 49 before, " \
           "1 at step 49 after" in head
    assert lines[:2] == ["Investigated: profiled the run; read the watch code — 1.9 h.",
                         "Worked on code review: reviewed the PR — 0.5 h."]
    assert lines[2].startswith("[1] run slow · history step_time_s (median of 50) ÷ run quick")


def test_kpis_cite_their_sources_and_missing_parts_are_stated():
    report = build_incident_report(_inputs())
    slowdown = next(k for k in report.kpis if k.label.startswith("Slowdown")).before
    assert slowdown.value == 4.0 and "slow" in slowdown.source and "quick" in slowdown.source
    assert any("no baseline run attached" in m for m in report.missing)
    assert any("No GPU utilisation series" in m for m in report.missing)
    bare = build_incident_report(ReportInput(title="nothing"))
    assert bare.findings == [] and "no incident run attached" in bare.missing[0]


def test_edited_log_entry_wins_and_cache_key_follows_inputs():
    a = _inputs()
    assert build_incident_report(_inputs(log_entry="Mine.")).log_entry == "Mine."
    assert cache_key(a) == cache_key(_inputs())
    assert cache_key(a) != cache_key(_inputs(sections={"summary": "changed"}))


def test_a_report_prepares_its_diagnosis_subject_once(monkeypatch):
    """The histogram pass is the costly part of a diagnosis: the findings and the log entry share it."""
    import incidents.diagnosis
    from incidents.diagnosis.subject import prepare
    from incidents.writeups.report import build

    calls = []

    def counted(*args, **kwargs):
        calls.append(args)
        return prepare(*args, **kwargs)

    for module in (build, incidents.diagnosis):  # wherever a report could reach it
        monkeypatch.setattr(module, "prepare", counted)
    report = build_incident_report(_inputs())
    assert len(calls) == 1
    assert report.findings
