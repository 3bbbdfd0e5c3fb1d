"""Incident writeups end to end, on both databases: build from real files, publish, hostile input.

Runs are real W&B offline runs (the reproducer's shipped tiny-preset sample, and runs written here
by the wandb SDK); PDFs are real WeasyPrint output read back with pdftotext.
"""

from __future__ import annotations

import http.server
import json
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.db import get_db
from hourtab.core.db import transaction
from incidents.evidence.sample_data import REPRO_TINY as REPRO
from incidents.evidence.sample_data import repro_tiny_runs
from incidents.writeups import billed_entries, service
from tests.factories import offline_wandb
from tests.helpers.hours import AUG_20, setup_retainer, toggl_csv


def _repro_runs() -> dict[str, Path]:
    return repro_tiny_runs()


def _pdf_text(path: Path) -> str:
    return subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture
def cli_env(database_url, tmp_path, monkeypatch):
    monkeypatch.setenv("HOURTAB_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HOURTAB_DATABASE_URL", database_url)
    runner = CliRunner()
    from app.cli import cli

    r = runner.invoke(cli, ["user", "create", "ada@example.com", "--password-stdin", "--name", "Ada"],
                      input="correct horse battery\n")
    assert r.exit_code == 0, r.output
    return runner, cli


def test_build_from_reproducer_output_gives_pdf_with_slowdown_and_verdict(cli_env, tmp_path):
    runner, cli = cli_env
    runs = _repro_runs()
    pdf = tmp_path / "incident.pdf"
    r = runner.invoke(cli, ["incident", "build", "--account", "ada@example.com", "--title", "Slow fine-tuning",
                            "--run", f"incident={runs['watch:all:1']}", "--run", f"baseline={runs['baseline']}",
                            "--profile", str(REPRO / "profile.json"), "--pdf", str(pdf), "--json"])
    assert r.exit_code == 0, r.output
    result = json.loads(r.stdout)
    assert set(result) == {"id", "diagnosis", "kpis", "log_entry", "undetermined"}       # fields are only added
    assert result["kpis"]["mean_step_time_before_after:before"]["value"] == pytest.approx(
        next(m for m in json.loads((REPRO / "profile.json").read_text())["modes"]
             if m["mode"] == "watch:all:1")["mean_step_s"])
    watch = next(d for d in result["diagnosis"] if d["rule"] == "watch_overhead")
    assert set(watch) == {"rule", "verdict", "evidence", "confidence"}
    assert 'log="all", log_freq=1' in watch["verdict"]
    profile = json.loads((REPRO / "profile.json").read_text())
    measured = next(m for m in profile["modes"] if m["mode"] == "watch:all:1")
    base = next(m for m in profile["modes"] if m["mode"] == "baseline")
    slowdown = result["kpis"]["slowdown"]
    # The KPI is computed from the runs' own step times; the reproducer measured the same steps.
    assert slowdown["value"] == pytest.approx(measured["mean_step_s"] / base["mean_step_s"], rel=0.05)
    text = _pdf_text(pdf)
    assert f"{slowdown['value']:.2f}×" in text
    assert "wandb.watch(log=\"all\", log_freq=1) is the cause" in re.sub(r"\s+", " ", text)
    assert re.search(r"Page 1 of \d", text)
    # No time entries are attached: the entry names no hours rather than "0.0h".
    assert result["log_entry"].splitlines()[0].endswith(".") and "0.0h" not in result["log_entry"]
    pages = tmp_path / "page"
    subprocess.run(["pdftoppm", "-png", "-r", "40", "-f", "1", "-l", "1", str(pdf), str(pages)], check=True)
    assert list(tmp_path.glob("page*.png"))


def test_diagnose_lists_every_rule_fired_or_not(cli_env):
    runner, cli = cli_env
    r = runner.invoke(cli, ["incident", "diagnose", str(_repro_runs()["watch:all:1"]), "--json"])
    assert r.exit_code == 0, r.output
    rules = json.loads(r.stdout)["diagnosis"]
    from incidents.diagnosis import RULES

    assert [d["rule"] for d in rules] == list(RULES)
    assert all(set(d) == {"rule", "fired", "class", "verdict", "evidence", "confidence"} for d in rules)
    assert all(d["class"] in ("engineering", "research", "healthy") for d in rules)


def _incident_with_entries(app, tmp_path):
    """A retainer with three sessions, an incident built from the reproducer runs, entries in phases."""
    rows = [("Client 1", "Profiled the slow run", "2017-08-14", "09:00:00", "01:30:00"),
            ("Client 1", "Changed wandb.watch settings", "2017-08-15", "10:00:00", "00:45:00"),
            ("Client 1", "Validated the fix against baseline", "2017-08-16", "14:00:00", "00:30:00")]
    runs = _repro_runs()
    with app.app_context():
        db = get_db()
        account, retainer = setup_retainer(db, data=toggl_csv(rows))
        from hourtab.core.blobs import blob_store
        from hourtab.timesheets.models import TimeEntry

        blobs = blob_store(Path(app.config["DATA_DIR"]))
        with transaction(db):
            incident = service.create_incident(db, account.id, "Slow fine-tuning", retainer.id)
            for role, mode in (("incident", "watch:all:1"), ("baseline", "baseline")):
                ev = service.ingest_run_path(db, account.id, runs[mode], blobs)
                service.attach_run(db, incident, ev.id, role)
            service.attach_profile(db, incident, *service.read_profile(REPRO / "profile.json"))
            entries = db.query(TimeEntry).order_by(TimeEntry.local_date).all()
            for entry, phase in zip(entries, ("investigation", "fix", "validation"), strict=True):
                billed_entries.assign_entries(db, incident, [entry.id], phase)
            service.refresh_generated(db, incident, blobs, "Ada")
        return retainer.public_token, incident.id, incident.slug, incident.log_entry


@pytest.fixture
def hours_app(app):
    app.config["HOURS_CLOCK"] = lambda: AUG_20
    return app


def test_log_entry_appears_on_public_page_only_after_publishing(hours_app, tmp_path):
    token, incident_id, slug, log_entry = _incident_with_entries(hours_app, tmp_path)
    first = log_entry.splitlines()[0]
    assert re.search(r": .*; .*; .*; .*; .*; 2\.8h\.$", first), first
    assert "Investigated: profiled the slow run — 1.5 h." in log_entry
    assert "Fixed: changed wandb.watch settings — 0.8 h." in log_entry
    client = hours_app.test_client()
    page = client.get(f"/h/{token}").get_data(as_text=True)
    assert "Incident writeup" not in page and "Slow fine-tuning" not in page
    assert client.get(f"/h/{token}/incidents/{slug}").status_code == 404
    assert client.get(f"/h/{token}/incidents/{slug}.pdf").status_code == 404
    with hours_app.app_context():
        db = get_db()
        with transaction(db):
            service.publish(db, service.get_incident(db, db.get(service.Incident, incident_id).account_id,
                                                     incident_id))
    page = client.get(f"/h/{token}").get_data(as_text=True)
    assert f'href="/h/{token}/incidents/{slug}"' in page
    from markupsafe import escape

    assert str(escape(first)) in page
    r = client.get(f"/h/{token}/incidents/{slug}")
    assert r.status_code == 200 and "Automatic diagnosis" in r.get_data(as_text=True)
    assert "<script" not in r.get_data(as_text=True).lower()
    pdf = client.get(f"/h/{token}/incidents/{slug}.pdf")
    assert pdf.status_code == 200 and pdf.data.startswith(b"%PDF")
    again = client.get(f"/h/{token}/incidents/{slug}.pdf")
    assert again.data == pdf.data
    assert client.get(f"/h/{'x' * 43}/incidents/{slug}").status_code == 404


HOSTILE = ('<script>alert(1)</script><img src=file:///etc/passwd>'
           '<link rel=attachment href="http://127.0.0.1:{port}/leak">'
           '<div style="background:url(http://127.0.0.1:{port}/css)">x</div>')


def _elements(html: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    """Every real element and its attributes, as a browser's parser sees them (text is not an element)."""
    from html.parser import HTMLParser

    found: list = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, attrs))

    Collect().feed(html)
    return found


class _Counter(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):  # noqa: N802 - http.server's naming
        _Counter.hits.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"root:x:0:0")

    def log_message(self, *args):
        pass


@pytest.fixture
def counting_server():
    _Counter.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_port, _Counter.hits
    server.shutdown()
    server.server_close()


def _hostile_run(root: Path, port: int) -> Path:
    """A real offline run whose name and config carry markup, with a few watch-style histograms."""
    import numpy as np
    import wandb

    with offline_wandb(root):
        hostile = HOSTILE.format(port=port)
        run = wandb.init(project="p", name=hostile[:120], dir=str(root), mode="offline",
                         config={"note": hostile, "lr": 0.1},
                         settings=wandb.Settings(silent=True, console="off", x_disable_stats=True))
        for step in range(4):
            bins = np.linspace(-1, 1, 65)
            run.log({"gradients/fc.weight": wandb.Histogram(np_histogram=(np.ones(64).tolist(), bins.tolist())),
                     "loss": 1.0 / (step + 1)}, step=step)
        folder = Path(run.dir).parent
        run.finish()
    return folder


def test_hostile_names_config_and_markdown_are_inert_in_page_and_pdf(hours_app, tmp_path, counting_server):
    port, hits = counting_server
    hostile = HOSTILE.format(port=port)
    folder = _hostile_run(tmp_path / "wb", port)
    with hours_app.app_context():
        db = get_db()
        account, retainer = setup_retainer(db)
        from hourtab.core.blobs import blob_store

        blobs = blob_store(Path(hours_app.config["DATA_DIR"]))
        with transaction(db):
            incident = service.create_incident(db, account.id, "Hostile " + hostile[:100], retainer.id)
            ev = service.ingest_run_path(db, account.id, folder, blobs)
            service.attach_run(db, incident, ev.id, "incident")  # no baseline, no fixed: missing roles
            # The reproducer's profile is of another model (BERT), not of this run's one tensor.
            service.attach_profile(db, incident, *service.read_profile(REPRO / "profile.json"))
            service.update_incident(db, incident, service.Edits(
                sections={"summary": hostile + f"\n\n![x](http://127.0.0.1:{port}/img.png)"},
                fix_after=hostile, log_entry=hostile))
            service.publish(db, incident)
        token, slug = retainer.public_token, incident.slug
    client = hours_app.test_client()
    r = client.get(f"/h/{token}/incidents/{slug}")
    assert r.status_code == 200
    html = r.get_data(as_text=True)
    tags = _elements(html)
    assert not [t for t, _ in tags if t in ("script", "link", "iframe", "object", "embed")]
    assert all(dict(a).get("src", "").startswith("data:") for t, a in tags if t == "img")
    assert not [a for _, a in tags if "url(" in (dict(a).get("style") or "")]
    assert html.count("<style>") == 1 and "url(" not in html.split("<style>", 1)[1].split("</style>", 1)[0]
    assert "&lt;script&gt;" in html
    assert "no baseline run attached" in html and "no fixed run attached" in html
    assert "profiles a different model" in html
    assert "No GPU utilisation series" in html
    page = client.get(f"/h/{token}").get_data(as_text=True)
    assert "<script" not in page.lower()
    pdf = client.get(f"/h/{token}/incidents/{slug}.pdf")
    assert pdf.status_code == 200
    assert hits == []
    assert b"root:x:0:0" not in pdf.data and b"/EmbeddedFile" not in pdf.data
    out = tmp_path / "h.pdf"
    out.write_bytes(pdf.data)
    text = _pdf_text(out)
    assert "<script>alert(1)</script>" in text.replace("\n", "")


def test_consultant_pages_create_attach_edit_and_publish(logged_in, app, tmp_path):
    from tests.helpers.forms import post_form

    r = post_form(logged_in, "/incidents", {"title": "Watch overhead <b>x</b>"})
    assert r.status_code == 302
    edit_url = r.headers["Location"]
    page = logged_in.get(edit_url).get_data(as_text=True)
    assert "Watch overhead &lt;b&gt;x&lt;/b&gt;" in page
    incident_id = int(re.search(r"/incidents/(\d+)", edit_url).group(1))
    with (REPRO / "profile.json").open("rb") as f:
        r = logged_in.post(f"/incidents/{incident_id}/evidence",
                           data={"profile": (f, "profile.json"),
                                 "csrf_token": re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)},
                           content_type="multipart/form-data")
    assert r.status_code == 302
    r = post_form(logged_in, f"/incidents/{incident_id}/text",
                  {"title": "Watch overhead", "environment": "", "fix_before": "a", "fix_after": "b",
                   "log_entry": "", "section_summary": "**Slow**", "regenerate": "1"}, page=edit_url)
    assert r.status_code == 302
    r = post_form(logged_in, f"/incidents/{incident_id}/actions",
                  {"text": "Turn watch down", "owner": "ML team", "due": "2030-01-01", "kind": "prevent"},
                  page=edit_url)
    assert r.status_code == 302
    preview = logged_in.get(f"/incidents/{incident_id}/preview").get_data(as_text=True)
    assert "<strong>Slow</strong>" in preview and "Turn watch down" in preview
    assert "no incident run attached" in preview
    r = post_form(logged_in, f"/incidents/{incident_id}/actions", {"text": "x", "kind": "nope"}, page=edit_url)
    assert r.status_code == 400 and "prevent" in r.get_data(as_text=True)
    assert logged_in.get(f"/incidents/{incident_id}.pdf").data.startswith(b"%PDF")
    assert post_form(logged_in, f"/incidents/{incident_id}/publish", {}, page=edit_url).status_code == 302
    after = logged_in.get(edit_url).get_data(as_text=True)
    assert ("Empty sections (left out of the published writeup): Impact, Detection, Root cause, What went well, "
            "What went wrong, Lessons.") in after


def test_sample_is_shipped_with_provenance():
    provenance = (REPRO / "PROVENANCE.md").read_text()
    assert "hourtab repro --preset tiny" in provenance
    assert shutil.which("pdftotext")


def test_build_into_a_missing_folder_says_one_line_and_keeps_no_draft(cli_env, tmp_path):
    runner, cli = cli_env
    runs = _repro_runs()
    r = runner.invoke(cli, ["incident", "build", "--account", "ada@example.com", "--title", "Slow",
                            "--run", f"incident={runs['watch:all:1']}", "--pdf", str(tmp_path / "no" / "x.pdf")])
    assert r.exit_code != 0 and len(r.output.strip().splitlines()) == 1 and "is not a folder" in r.output
    assert "Traceback" not in r.output
    from app import create_app
    from incidents.writeups.models import Incident

    app = create_app()
    with app.app_context():
        assert get_db().query(Incident).count() == 0


def test_diagnose_refuses_bad_input_with_status_2_and_names_an_empty_log(cli_env, tmp_path):
    runner, cli = cli_env
    empty = tmp_path / "run-empty.wandb"
    empty.write_bytes(b"")
    r = runner.invoke(cli, ["incident", "diagnose", str(empty)])
    assert r.exit_code == 2 and "is empty (0 bytes)" in r.output and len(r.output.strip().splitlines()) == 1
    junk = tmp_path / "run-junk.wandb"
    junk.write_bytes(b"not a log at all")
    r = runner.invoke(cli, ["incident", "diagnose", str(junk)])
    assert r.exit_code == 2 and "not a W&B transaction log" in r.output


@pytest.mark.slow
def test_the_publish_job_renders_what_the_public_page_then_reads_from_the_cache(hours_app, tmp_path, monkeypatch):
    """The job renders through the page's own door (same inputs, same PDF link): the client's first
    visit to the writeup and its PDF renders nothing."""
    from app.jobs import enqueue
    from app.jobs.broker import start
    from incidents.writeups import document

    token, incident_id, slug, _ = _incident_with_entries(hours_app, tmp_path)
    with hours_app.app_context():
        db = get_db()
        incident = db.get(service.Incident, incident_id)
        with transaction(db):
            service.publish(db, incident)
        rendered = []
        real = document.document_bytes
        monkeypatch.setattr(document, "document_bytes",
                            lambda report, kind="pdf", pdf_url=None: rendered.append(kind) or real(report, kind, pdf_url))
        job = start(db, incident.account_id, "incident_publish",
                    {"incident_id": incident_id, "public_url": f"/h/{token}/incidents/{slug}"})
        enqueue(job.id)
        db.refresh(job)
        assert job.status == "done", job.error
    assert sorted(rendered) == ["html", "pdf"]
    client = hours_app.test_client()
    page = client.get(f"/h/{token}/incidents/{slug}")
    pdf = client.get(f"/h/{token}/incidents/{slug}.pdf")
    assert page.status_code == 200 and f'href="/h/{token}/incidents/{slug}.pdf"' in page.get_data(as_text=True)
    assert pdf.data.startswith(b"%PDF")
    assert sorted(rendered) == ["html", "pdf"]          # both were cache hits
