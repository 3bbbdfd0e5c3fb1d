"""A profile of another setup is labelled so wherever it is shown (issue 20).

The key_averages table in tests/data/profiles/repro was captured by HourTab's reproducer on a 1-layer,
hidden-32 BERT (seq 8, batch 1; its profile.json beside it says so). Tables the reproducer writes now
carry that setup in a header line; here the header it would have written is put above the table,
and the table is attached to the shipped tiny-preset incident (2 layers, seq 128, batch 2).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from incidents.diagnosis import setup
from incidents.evidence.profiler import inspect_profile
from incidents.evidence.sample_data import repro_tiny_runs
from incidents.evidence.wandb import load_run
from incidents.writeups.report.build import build_incident_report
from incidents.writeups.report.html import render_html
from incidents.writeups.report.inputs import ProfileInput, ReportInput, RunInput

DATA = Path(__file__).resolve().parents[3] / "data" / "profiles" / "repro"
HEADER = ("# hourtab repro: model=BertForSequenceClassification preset=tiny layers=1 hidden=32 seq_len=8 "
          "batch_size=1 parameter_tensors=25 parameters=1007438 mode=watch:all:1 device=cpu\n")


@pytest.fixture(scope="module")
def incident():
    return load_run(repro_tiny_runs()["watch:all:1"])


def _table(tmp_path: Path, header: str = HEADER) -> dict:
    profile = json.loads((DATA / "profile.json").read_text())
    assert profile["model"]["parameter_tensors"] == 25 and profile["model"]["seq_len"] == 8   # the header is true
    path = tmp_path / "key_averages.txt"
    path.write_text(header + (DATA / "profiler" / "key_averages.txt").read_text())
    return inspect_profile(path).to_dict()


def test_a_table_reads_the_setup_it_carries_and_its_histograms_per_step(tmp_path):
    doc = _table(tmp_path)
    assert doc["setup"]["preset"] == "tiny" and doc["setup"]["seq_len"] == 8 and doc["setup"]["batch_size"] == 1
    assert doc["watch"]["ranges"] == 50 and doc["steps"] == 1 and doc["watch"]["histograms_per_step"] == 50
    signature = setup.profile_signature(doc, "key_averages.txt")
    assert signature.tensors == 25 and signature.batch == "1" and signature.seq == "8"


def test_a_table_of_another_setup_is_labelled_and_not_used(incident, tmp_path):
    doc = _table(tmp_path)
    report = build_incident_report(ReportInput(title="t", runs=(RunInput("incident", incident),),
                                      profiles=(ProfileInput("key_averages.txt", doc),)))
    (attribution,) = report.attributions
    assert attribution.different_setup.startswith("From a different setup: 25 parameter tensors vs this run's 41")
    assert "batch size 1 vs this run's 2" in attribution.different_setup
    assert "sequence length 8 vs this run's 128" in attribution.different_setup
    assert attribution.signature.startswith("BertForSequenceClassification (tiny preset), 25 parameter tensors")
    watch = next(f for f in report.findings if f.rule == "watch_overhead")
    assert "key_averages.txt is from a different setup" in watch.evidence["profile_note"]
    assert "key_averages.txt" not in watch.evidence["watch_share_source"]
    page = render_html(report)
    assert "Profile attribution: key_averages.txt (from a different setup)" in page
    assert "1M params" not in report.environment and "key_averages" not in report.log_entry.splitlines()[0]


def test_without_a_header_a_table_is_not_called_another_setup_on_a_lower_bound(incident, tmp_path):
    doc = _table(tmp_path, header="")
    report = build_incident_report(ReportInput(title="t", runs=(RunInput("incident", incident),),
                                      profiles=(ProfileInput("key_averages.txt", doc),)))
    # 50 histograms per profiled step could be a sparser watch of the same model: nothing is claimed.
    assert report.attributions[0].different_setup == "" and report.attributions[0].signature == "model not recorded"
    run = setup.WatchConfig("all", 1, 8, "run")
    table = setup.WatchConfig(None, None, 50, "table", lower_bound=True)
    anonymous = setup.Signature(None, None, None, "table")
    assert setup.signature_mismatch(setup.Signature(4, 98, None, "run"), anonymous, run, table) == \
        ["50 watch histograms per profiled step vs this run's 8 per logging step"]
    assert setup.signature_mismatch(setup.Signature(41, None, None, "run"), anonymous,
                                    setup.WatchConfig("all", 1, 82, "run"), table) == []
