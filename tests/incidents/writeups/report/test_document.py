"""The rendered writeup: what stays together across pages, what a client never sees, charts and wording."""

from __future__ import annotations

import base64
import datetime as dt
import subprocess

import numpy as np
import pandas as pd
import pytest

from incidents.evidence.wandb.evidence import RunEvidence
from incidents.writeups.report import charts
from incidents.writeups.report.build import build_incident_report
from incidents.writeups.report.html import render_html
from incidents.writeups.report.inputs import EntryInput, ReportInput, RunInput
from incidents.writeups.report.publish_checks import publish_warnings


def _run(run_id: str, step_s: float, name: str = "", steps: int = 60, loss=None) -> RunEvidence:
    history = pd.DataFrame({"_runtime": np.arange(1, steps + 1) * step_s,
                            "loss": np.linspace(2.0, 1.0, steps) if loss is None else loss,
                            "step_time_s": [step_s] * steps},
                           index=pd.Index(range(steps), name="_step"))
    return RunEvidence(run_id=run_id, name=name or run_id, project="acme", history=history,
                       runtime_s=steps * step_s, environment={"python": "CPython 3.11.7", "torch": "2.13.0"})


def _svg(chart) -> str:
    return base64.b64decode(chart.uri.split(",", 1)[1]).decode()


def test_mathtext_run_names_are_plain_text_and_identical_curves_stay_visible():
    odd = _run("a1", 0.2, name=r"bert $\frac{$ run")
    same = _run("b2", 0.2, name="baseline $x$")
    loss = charts.loss_curves([("incident", odd), ("baseline", same)])
    svg = _svg(loss)
    assert loss.uri and "stroke-dasharray" in svg         # the baseline's dashes show over the same curve
    step = charts.step_time_distribution([("incident", odd), ("baseline", same)], [], None)
    assert step.uri is not None


def test_step_times_switch_units_and_log_ticks_are_labelled():
    slow = _run("slow", 328.4983)
    chart = charts.step_time_distribution([("incident", slow)], [], None)
    svg = _svg(chart)
    assert "step time (min, log scale)" in svg
    assert "328498" not in svg


def _inputs(status: str, summary_lines: int = 0, fix_lines: int = 2, title: str = "Slow training") -> ReportInput:
    entries = (EntryInput(1, "validation", dt.date(2026, 1, 5), 1800, "Validated the fix against baseline.",
                          "Acme ML"),)
    summary = "\n".join(f"- observation {i}" for i in range(summary_lines))
    before = "\n".join(f'wandb.watch(model, log="all", log_freq=1)  # line {i}' for i in range(fix_lines))
    after = "\n".join(f'wandb.watch(model, log="gradients", log_freq=100)  # line {i}' for i in range(fix_lines))
    return ReportInput(title=title, status=status, sections={"summary": summary} if summary else {},
                       runs=(RunInput("incident", _run("slow", 0.4)), RunInput("fixed", _run("quick", 0.1))),
                       entries=entries, fix_before=before, fix_after=after)


def test_published_writeup_hides_prompts_and_publishing_warns_about_empty_sections():
    published = render_html(build_incident_report(_inputs("published")))
    draft = render_html(build_incident_report(_inputs("draft")))
    for prompt in ("Who was affected", "No action items yet.", "What to keep doing"):
        assert prompt in draft and prompt not in published
    warnings = publish_warnings(build_incident_report(_inputs("draft")))
    assert warnings[0].startswith("Empty sections") and "Impact" in warnings[0] and "Action items" in warnings[0]


def test_a_title_the_measurements_contradict_is_flagged():
    assert not [w for w in publish_warnings(build_incident_report(_inputs("draft", title="4x slower"))) if "title" in w]
    flagged = [w for w in publish_warnings(build_incident_report(_inputs("draft", title="10x slower training")))
               if "title" in w]
    assert flagged == ["The title says 10x, but the measured slowdown is 4.00×."]


def test_wording_has_no_doubled_verbs_stray_stops_or_lowercased_acronyms():
    report = build_incident_report(_inputs("draft"))
    entry = report.log_entry
    assert "Validated: the fix against baseline — 0.5 h." in entry
    assert "validated the" not in entry.lower().replace("validated: the", "")
    assert ".;" not in entry and ".." not in entry and "gPU" not in entry
    assert entry.startswith("Acme ML — Slow training:")


@pytest.mark.slow
def test_fix_diff_never_splits_across_pages(tmp_path):
    """Move a 16-line diff down a page in steps; at every position it sits whole on one page."""
    from hourtab.core.pdf import render_pdf
    from incidents.writeups.report.report_pdf import pdf_html

    checked = 0
    for lines in range(0, 60, 6):
        pdf = tmp_path / f"r{lines}.pdf"
        pdf.write_bytes(render_pdf(pdf_html(build_incident_report(_inputs("published", lines, fix_lines=8)))))
        pages = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True,
                               check=True).stdout.split("\f")
        holding = [i for i, page in enumerate(pages) if "- wandb.watch" in page or "+ wandb.watch" in page]
        assert len(holding) == 1, (lines, holding)
        page = pages[holding[0]]
        assert page.count("- wandb.watch") == 8 and page.count("+ wandb.watch") == 8
        checked += 1
    assert checked == 10


def test_clauses_keep_acronyms_and_drop_stray_full_stops():
    from incidents.writeups.report.figures import clause, lower_first

    assert lower_first("GPU under-used (model too small?)") == "GPU under-used (model too small?)"
    assert lower_first("NaN gradients") == "NaN gradients" and lower_first("The loss fell") == "the loss fell"
    assert clause("Validated the fix.") == "Validated the fix" and clause("done..") == "done"
