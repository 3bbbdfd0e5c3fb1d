"""One report, one figure per quantity; the log entry and the PDF say what the runs could not show.

The incident is real: the reproducer measured in two rounds on a loaded machine (baseline,
watch:all:1, and watch:gradients:100 as the "fixed" run, which never reached a logging step; see
tests/data/PROVENANCE.md). Its second-round runs carry summaries pooled over both rounds, hook wall
time several times the CPU time, and a training loss as the only outcome: the shapes that gave one
PDF three step times and four ratios. The PDF is rendered once for the module.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
import subprocess
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from incidents.evidence.wandb import load_run
from incidents.evidence.wandb.evidence import RunEvidence
from incidents.writeups.report import charts
from incidents.writeups.report.build import build_incident_report
from incidents.writeups.report.figures import step_time
from incidents.writeups.report.inputs import ActionInput, EntryInput, ProfileInput, ReportInput, RunInput

DATA = Path(__file__).resolve().parents[3] / "data" / "repro_rounds"
START = dt.datetime(2026, 12, 4, 18, 30, tzinfo=dt.UTC)


def _entry(i: int, phase: str, hours_after: float, seconds: int, text: str) -> EntryInput:
    start = START + dt.timedelta(hours=hours_after)
    return EntryInput(i, phase, start.date(), seconds, text, "Acme ML", start_at=start,
                      end_at=start + dt.timedelta(seconds=seconds))


@pytest.fixture(scope="module")
def incident():
    runs = {p.name.split("-")[-1].split(".")[0]: load_run(p) for p in sorted((DATA / "wandb").glob("*.tar.gz"))}
    profile = json.loads((DATA / "profile.json").read_text())
    inputs = ReportInput(
        title="Slow BERT fine-tuning", status="published", author="Ada",
        runs=(RunInput("incident", runs["hlfwibgt"]), RunInput("baseline", runs["0qz1lavj"]),
              RunInput("fixed", runs["z6reaafj"])),
        profiles=(ProfileInput("profile.json", profile),),
        entries=(_entry(1, "investigation", 0, 5400, "Profiled the watch hooks"),
                 _entry(2, "fix", 2, 1800, "Changed the watch call"),
                 _entry(3, "validation", 20, 1800, "Validated the fix")),
        fix_before='wandb.watch(model, log="all", log_freq=1)',
        fix_after='wandb.watch(model, log="gradients", log_freq=100)',
        actions=(ActionInput("Lint for log_freq=1", "Ada", dt.date(2026, 12, 20)),),
        severity="SEV3", gpu_hour_price=Decimal("2.50"))
    return runs, profile, build_incident_report(inputs)


@pytest.fixture(scope="module")
def pdf_pages(incident, tmp_path_factory) -> list[str]:
    from hourtab.core.pdf import render_pdf
    from incidents.writeups.report.report_pdf import pdf_html

    path = tmp_path_factory.mktemp("pdf") / "incident.pdf"
    path.write_bytes(render_pdf(pdf_html(incident[2])))
    text = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout
    return text.split("\f")


@pytest.fixture(scope="module")
def pdf_flow(pdf_pages, tmp_path_factory) -> str:
    """The PDF's text in reading order (table headings whole), whitespace collapsed."""
    path = next(tmp_path_factory.getbasetemp().glob("pdf*/incident.pdf"))
    text = subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, check=True).stdout
    return re.sub(r"\s+", " ", text)


def _kpi(report, start: str):
    return next(k for k in report.kpis if k.label.startswith(start))


def _history_median(run) -> float:
    times = pd.to_numeric(run.history["step_time_s"], errors="coerce").dropna()
    return float(times[times > 0].median())


def test_a_pooled_summary_is_not_cited_as_the_runs_own_and_every_place_shows_one_step_time(incident):
    runs, profile, report = incident
    run, base = runs["hlfwibgt"], runs["0qz1lavj"]
    # The second round's run says 12 steps measured but logged 9: its summary pools both rounds.
    assert run.summary["repro/steps_measured"] == 12 and len(run.history) == 9
    step = _kpi(report, "Median step time")
    assert step.before.value == pytest.approx(_history_median(run))
    assert step.before.value != pytest.approx(run.summary["repro/median_step_s"])
    assert "run hlfwibgt" in step.before.source and "history step_time_s (median of 8)" in step.before.source
    slowdown = _kpi(report, "Slowdown")
    assert slowdown.before.value == pytest.approx(_history_median(run) / _history_median(base))
    watch = next(f for f in report.fired if f.rule == "watch_overhead")
    assert watch.evidence["slowdown"] == pytest.approx(slowdown.before.value)
    paragraph = report.log_entry.splitlines()[0]
    assert f"steps {slowdown.before.text} slower than baseline ({step.before.text} vs " in paragraph
    # The chart marks each run's median at the key figure itself, and names no median of its own.
    fig, sources = charts.draw_step_times([("incident", run)], [], None, {"incident": step.before})
    lines = [line for line in fig.axes[0].get_lines() if len(set(line.get_xdata())) == 1]
    assert [line.get_xdata()[0] for line in lines] == [pytest.approx(step.before.value * 1000)]
    assert not any("median" in t.get_text() for t in fig.legends[0].get_texts())


def test_runtime_ratios_and_hook_time_are_each_one_named_figure(incident):
    runs, profile, report = incident
    run = runs["hlfwibgt"]
    span = _kpi(report, "Training span")
    times = run.history["_runtime"].dropna()
    assert span.before.value == pytest.approx(times.iloc[-1] - times.iloc[0])
    evidence = next(r for r in report.runs if r["role"] == "incident")
    assert evidence["runtime"] == "1.0 s" and run.runtime_s == pytest.approx(1.0)        # wall time, named apart
    # The profile table shows the reproducer's own ratio of means, labelled so; the fix costs are those figures.
    modes = {m.mode: m for m in report.attributions[0].mode_figures}
    for mode in profile["modes"]:
        assert modes[mode["mode"]].ratio.text == f"{mode['ratio_to_baseline']:.2f}×"
    fixes = next(f for f in report.fired if f.rule == "watch_overhead").evidence["fixes"]
    assert f"{fixes[0]['ratio_to_baseline']:.2f}×" == modes["watch:gradients:100"].ratio.text
    assert fixes[0]["source"].endswith("watch:gradients:100")
    # Hook time: wall clock and CPU time, both given, and which one the verdict uses.
    watch = next(m for m in profile["modes"] if m["mode"] == "watch:all:1")
    assert watch["mean_hook_ms"] > 3 * watch["mean_hook_cpu_ms"]                       # measured under load
    assert (f"watch hooks {watch['mean_hook_ms']:.1f} ms/step of wall-clock time ({watch['mean_hook_cpu_ms']:.1f} "
            "ms/step of CPU time on the training thread; the verdict's share of step time is wall-clock)") \
        in report.log_entry


def test_the_watch_verdict_writes_each_figure_as_the_report_does(incident):
    """The verdict, shown beside the report's tables, gives the share and step times in their units."""
    runs, profile, report = incident
    verdict = next(f for f in report.fired if f.rule == "watch_overhead").verdict
    share = {m.mode: m for m in report.attributions[0].mode_figures}["watch:all:1"].share
    step = _kpi(report, "Median step time").before
    baseline = step_time(_history_median(runs["0qz1lavj"]))
    assert f"{share.text} of step time was spent in watch work" in verdict
    assert f"Predicted step time without it: {baseline}, the baseline's median (now {step.text})." in verdict
    assert re.fullmatch(r"\d+\.\d %", share.text) and re.fullmatch(r"\d+\.\d ms", step.text)


def test_the_pdf_shows_each_quantity_once_with_its_runs_named(incident, pdf_flow):
    runs, profile, report = incident
    flat = pdf_flow
    slowdown = _kpi(report, "Slowdown").before.text
    # Every "slower than" ratio is the one slowdown; every other ratio is in the labelled profile table.
    assert set(re.findall(r"(\d+\.\d+×) slower", flat)) == {slowdown}
    table = {m.ratio.text for m in report.attributions[0].mode_figures}
    whole = re.findall(r"whole-run ratio (\d+\.\d+×)", flat)
    assert len(whole) == 1 and whole[0] not in {slowdown} | table      # a third quantity, under its own name
    assert set(re.findall(r"(?<!whole-run ratio )\b\d+\.\d+×", flat)) == {slowdown} | table
    assert "Mean ÷ baseline mode's mean" in flat and "Training span before → after" in flat
    assert "Hooks per step, wall clock" in flat and "Hooks per step, CPU" in flat
    assert "Wall time (whole run)" in flat and "Runtime" not in flat
    assert "Severity SEV3 Status resolved" in flat and re.search(r"Cost of the GPU-?hours lost not computed", flat)
    # Each step time the key figures state is the one the log entry states.
    step = _kpi(report, "Median step time")
    assert f"({step.before.text} vs {report.comparison.reference_figure.text}, median)" in flat
    # Footnotes: every key figure's source names its run(s), and charts name the runs drawn.
    sources = flat.split(" Sources ")[-1]
    for role, run in (("incident", runs["hlfwibgt"]), ("fixed", runs["z6reaafj"])):
        assert f"run {run.run_id} (repro {'watch:all:1' if role == 'incident' else 'watch:gradients:100'} on vm)" \
            in sources
    for chart in report.charts:
        assert all(run.run_id in chart.source for run in runs.values()), chart.title


def test_the_log_entry_says_the_fixed_run_never_logged_and_what_its_outcome_is(incident):
    runs, profile, report = incident
    paragraph = report.log_entry.splitlines()[0]
    assert ("fixed run, which never reached a logging step (9 steps logged, log_freq=100), so its step time leaves "
            "out the histograms the fix still logs") in paragraph
    assert "same train/loss at the last step (a training-loss point, not a held-out metric)" in paragraph
    assert "accuracy" not in paragraph
    row = next(r for r in report.verification if r.label.startswith("Watch logging"))
    assert row.after.value == 0.0 and "z6reaafj" in row.after.source


def test_pdf_log_entry_whole_on_one_page_and_charts_headed_for_what_they_hold(incident, pdf_pages):
    runs, profile, report = incident
    first = report.log_entry.splitlines()[0][:40]
    last = report.log_entry.splitlines()[-1][:30]
    holding = [i for i, page in enumerate(pdf_pages) if first in re.sub(r"\s+", " ", page)]
    assert len(holding) == 1 and last in pdf_pages[holding[0]]
    text = "\n".join(pdf_pages)
    assert "GPU utilisation over time" not in text                # no frame without a GPU series
    assert "overlaid" in next(c.title for c in report.charts if c.title.startswith("Loss"))
    single = charts.loss_curves([("incident", runs["hlfwibgt"])])
    assert single.title == "Loss curve" and "overlaid" not in single.title


def test_legends_sit_outside_the_data_and_keep_whole_run_names(incident):
    runs, _, _ = incident
    long = copy.copy(runs["hlfwibgt"])
    long.name = "bert-base-uncased fine-tune on the support-ticket corpus, lr 2e-5, watch all every step"
    fig, _ = charts.draw_step_times([("incident", long), ("baseline", runs["0qz1lavj"])], [], None)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    legend, axes = fig.legends[0].get_window_extent(renderer), fig.axes[0].get_window_extent(renderer)
    assert legend.y1 <= axes.y0                                    # below the plot: covers no bar
    assert legend.x1 <= fig.bbox.x1 and legend.y0 >= fig.bbox.y0   # and inside the figure
    shown = " ".join(t.get_text().replace("\n", " ") for t in fig.legends[0].get_texts())
    assert long.name in shown


def test_no_gpu_frame_for_a_single_sample():
    system = pd.DataFrame({"_runtime": [30.0], "system.gpu.0.gpu": [87.0]})
    run = RunEvidence(run_id="one", name="one", system=system,
                      history=pd.DataFrame({"loss": np.linspace(1, 0, 5)}))
    chart = charts.gpu_utilisation_chart([("incident", run)])
    assert chart.uri is None and "(1 GPU sample)" in chart.missing


# --- the postmortem header -------------------------------------------------------------------------------


def test_milestones_come_from_the_runs_and_entries_in_order_and_each_names_its_source(incident):
    runs, _, report = incident
    header = report.postmortem
    at = {m.name: m for m in header.milestones}
    assert at["began"].at == runs["hlfwibgt"].started_at and at["began"].event_key == "run:hlfwibgt:start"
    assert at["detected"].at == START and "time entry 1 (investigation) started" in at["detected"].figure.source
    # The baseline run ended before anyone was called in: the diagnosis is the investigation's end.
    assert runs["0qz1lavj"].ended_at < START
    assert at["diagnosed"].at == START + dt.timedelta(hours=1.5)
    assert at["resolved"].at == START + dt.timedelta(hours=20.5) and "validation" in at["resolved"].figure.source
    assert header.status.text == "resolved" and "derived from the milestones" in header.status.source
    stages = dict(header.stages)
    assert stages["Time to resolve"].value == pytest.approx((at["resolved"].at - at["began"].at).total_seconds())
    # A CPU run has no GPU-hours to price; the log entry's diagnosis date is the diagnosed milestone's.
    assert header.cost.missing and "CPU run" in header.cost.text
    assert "diagnosed 4 December 2026 by null-hypothesis test" in report.log_entry
    assert "time entry 1 (investigation) ended" in report.log_entry


def test_set_milestones_status_and_price_win_and_the_cost_prices_the_hours_lost(incident):
    from dataclasses import replace

    runs, _, report = incident
    # The same runs, as if each had trained on 8 GPUs: the hours lost are GPU-hours, and have a price.
    on_gpus = {k: replace(r, environment={**r.environment, "gpu_count": 8}) for k, r in runs.items()}
    inputs = replace(report.inputs, runs=tuple(replace(r, run=on_gpus[r.run.run_id]) for r in report.inputs.runs),
                     milestones={"detected": dt.datetime(2026, 12, 4, 18, 20, tzinfo=dt.UTC)},
                     incident_status="monitoring", gpu_hour_price=Decimal("3.20"), currency="EUR")
    rebuilt = build_incident_report(inputs)
    lost = next(k for k in rebuilt.kpis if "lost" in k.label)
    assert lost.label == "GPU-hours lost" and lost.before.value > 0
    header = rebuilt.postmortem
    assert header.cost.value == pytest.approx(lost.before.value * 3.20)
    assert header.cost.text == f"EUR {lost.before.value * 3.20:,.2f}" and "set by the consultant" in header.cost.source
    assert header.milestone("detected").figure.text == "2026-12-04 18:20 UTC"
    assert header.milestone("detected").figure.source == "detected: set by the consultant"
    assert header.status.text == "monitoring" and header.status.source == ""
    assert any(e.key == "milestone:detected" for e in rebuilt.timeline)
