"""``hourtab watchdog`` on real offline W&B runs written, while it watches, by a child training process.

One watchdog is started on an empty ``wandb`` folder. A baseline run (no watch) is written and
finished: no alert. Then a run with ``wandb.watch(log="all", log_freq=1)`` appears — a folder that did
not exist when the watchdog started — and must be flagged while the child is still training. Tiny
BERT, one torch thread, short sequences (two shared cores).
"""

from __future__ import annotations

import email
import email.policy
import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import cli

# Both tests read one module-scoped training run (~13 s): one xdist group keeps it on one worker, made once.
pytestmark = [pytest.mark.torch, pytest.mark.slow, pytest.mark.xdist_group("watchdog")]
CHILD = Path(__file__).with_name("child_train.py")
ROOT = Path(__file__).resolve().parents[4]


def start_child(root: Path, mode: str, steps: int, stop: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, str(CHILD), str(root), mode, str(steps), str(stop)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


@pytest.fixture(scope="module")
def watched(tmp_path_factory):
    """Run the scenario once; the tests read what happened."""
    pytest.importorskip("transformers")
    from incidents.tools.audit.cost import load_calibration
    from incidents.tools.watchdog import Watchdog

    base = tmp_path_factory.mktemp("watchdog")
    root = base / "wandb-home"
    root.mkdir()
    alerts: list[dict] = []
    seen: list[tuple[str, str, int | None]] = []
    child_running: dict[str, bool] = {}
    children: dict[str, subprocess.Popen] = {}

    def on_alert(alert: dict) -> None:
        child = children.get("watch")
        child_running[alert["run_id"]] = child is not None and child.poll() is None
        alerts.append(alert)

    dog = Watchdog(root, load_calibration(), on_alert)
    stop = threading.Event()
    thread = threading.Thread(target=dog.follow, kwargs={
        "poll_s": 0.5, "stop": stop.is_set,
        "on_poll": lambda o: o is not None and seen.append((o.run_id, o.state, o.last_step))})
    thread.start()
    try:
        baseline = start_child(root, "baseline", 12, base / "stop-baseline")
        assert baseline.wait(timeout=300) == 0, baseline.stderr.read().decode()[-2000:]
        assert wait_for(lambda: any(state == "finished" for _, state, _ in seen), 30)
        baseline_alerts = list(alerts)

        children["watch"] = start_child(root, "watch", 200, base / "stop-watch")
        fired = wait_for(lambda: bool(alerts), 300)
        (base / "stop-watch").touch()
        assert children["watch"].wait(timeout=120) == 0, children["watch"].stderr.read().decode()[-2000:]
    finally:
        stop.set()
        thread.join(timeout=30)
        for child in children.values():
            if child.poll() is None:
                child.kill()
    folders = sorted(p for p in (root / "wandb").iterdir() if p.name.startswith("offline-run-"))
    return {"root": root, "alerts": alerts, "baseline_alerts": baseline_alerts, "fired": fired,
            "running": child_running, "folders": folders, "seen": seen}


def test_baseline_run_raises_nothing(watched):
    assert watched["baseline_alerts"] == []
    assert len(watched["folders"]) == 2


def test_watch_all_every_step_is_flagged_within_50_steps_while_training(watched):
    assert watched["fired"]
    (alert,) = watched["alerts"]  # one notification per run and rule
    watch_folder = watched["folders"][1]
    assert alert["run_folder"] == str(watch_folder)  # the folder that appeared after the watchdog started
    assert watched["running"][alert["run_id"]] is True and alert["run_state"] == "unfinished"
    assert alert["rule"] == "watch_overhead" and alert["fired"] is True
    assert alert["at_step"] is not None and alert["at_step"] <= 50
    assert alert["verdict"].startswith('wandb.watch(log="all", log_freq=1) is the cause: histograms of 41 tensors '
                                       "every 1 step; ")
    source = alert["evidence"]["watch_share_source"]
    assert source.startswith("estimate: ") and alert["evidence"]["share_is_estimate"] is True
    # Calibrated CPU time is set against the step's CPU time (from the run's system.cpu), or against the wall
    # step and then called a lower bound; never a busy machine's wall step as if it were CPU time.
    assert "s of histograms per step, CPU time" in source
    assert "÷ CPU time per step " in source or "so on a busy machine" in source or "did not wait for a CPU" in source
    assert alert["draft_incident"].startswith("hourtab incident build --account YOU@EXAMPLE.COM --title ")
    assert alert["draft_incident"].endswith(f"--run incident={watch_folder}")
    assert "--run baseline=RUN" in alert["draft_note"]


def test_verdict_is_the_incident_reports(watched):
    """On the same evidence, the incident report's diagnosis words the verdict exactly as the watchdog."""
    from incidents.diagnosis import diagnose
    from incidents.evidence.wandb import load_run
    from incidents.tools.audit.cost import load_calibration
    from incidents.tools.watchdog import observe

    run = load_run(watched["folders"][1])
    seen = observe(run, load_calibration())
    evidence = seen.finding.evidence
    report = next(f for f in diagnose(run, profile={"watch_share": evidence["watch_share"], "share_is_estimate": True},
                                      profile_source=evidence["watch_share_source"]) if f.rule == "watch_overhead")
    assert seen.finding.fired and report.fired and report.verdict == seen.finding.verdict
    assert evidence["share_is_estimate"] is True and "an estimated" in seen.finding.verdict


def test_once_json_on_each_run(watched):
    baseline, watch = watched["folders"]
    quiet = CliRunner().invoke(cli, ["watchdog", str(baseline), "--once", "--json"])
    assert quiet.exit_code == 0, quiet.output
    doc = json.loads(quiet.output)
    assert doc["alerts"] == [] and doc["observation"]["histogram_steps"] == 0
    assert doc["observation"]["state"] == "finished" and doc["observation"]["step_s"] > 0
    loud = CliRunner().invoke(cli, ["watchdog", str(watch), "--once", "--json", "--account", "me@example.com"])
    assert loud.exit_code == 1
    doc = json.loads(loud.output)
    assert [a["rule"] for a in doc["alerts"]] == ["watch_overhead"]
    assert "--account me@example.com" in doc["alerts"][0]["draft_incident"]


def test_webhook_receives_the_alert(watched):
    received: list[dict] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's naming
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/hook"
        result = CliRunner().invoke(cli, ["watchdog", str(watched["root"]), "--once", "--notify", url])
    finally:
        server.shutdown()
        thread.join()
    assert result.exit_code == 1
    assert [r["rule"] for r in received] == ["watch_overhead"] and "[hourtab watchdog]" in received[0]["text"]


class Inbox:
    """An aiosmtpd handler that keeps every message it is given."""

    def __init__(self) -> None:
        self.messages: list[tuple[list[str], email.message.EmailMessage]] = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's hook name
        self.messages.append((list(envelope.rcpt_tos), email.message_from_bytes(
            envelope.original_content, policy=email.policy.default)))
        return "250 OK"


def test_email_receives_the_alert_once_per_run_and_rule(watched):
    from aiosmtpd.controller import Controller

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    env = {"HOURTAB_SMTP_URL": f"smtp://127.0.0.1:{port}", "HOURTAB_MAIL_FROM": "HourTab <watch@ml.example.com>"}
    try:
        result = CliRunner().invoke(cli, ["watchdog", str(watched["root"]), "--once", "--notify",
                                          "mailto:oncall@ml.example.com", "--notify", "email:lead@ml.example.com"],
                                    env=env)
        quiet = CliRunner().invoke(cli, ["watchdog", str(watched["folders"][0]), "--once",
                                         "--notify", "mailto:oncall@ml.example.com"], env=env)
    finally:
        controller.stop()
    assert result.exit_code == 1, result.output
    assert quiet.exit_code == 0, quiet.output
    assert [rcpt for rcpt, _ in inbox.messages] == [["oncall@ml.example.com"], ["lead@ml.example.com"]]
    alert_run = watched["alerts"][0]["run_id"]
    for _, message in inbox.messages:
        assert message["Auto-Submitted"] == "auto-generated" and message["From"] == "HourTab <watch@ml.example.com>"
        assert message["Subject"] == f"[hourtab watchdog] watch overhead on W&B run {alert_run}"
        assert not message.is_multipart() and message.get_content_type() == "text/plain"
        body = message.get_content()
        assert body.startswith(f"[hourtab watchdog] watch_overhead fired on run {alert_run} at step ")
        assert 'wandb.watch(log="all", log_freq=1) is the cause' in body
        assert f"--run incident={watched['folders'][1]}" in body


def test_refused_input_exits_2(tmp_path):
    missing = CliRunner().invoke(cli, ["watchdog", str(tmp_path / "nope"), "--once"])
    assert missing.exit_code == 2 and missing.output.strip() == "Error: nope: no such folder."
    bad = CliRunner().invoke(cli, ["watchdog", str(tmp_path), "--once", "--notify", "pager"])
    assert bad.exit_code == 2 and "--notify takes stdout, an http(s) webhook URL or mailto:ADDRESS" in bad.output
    no_smtp = CliRunner().invoke(cli, ["watchdog", str(tmp_path), "--once", "--notify", "mailto:me@example.com"],
                                 env={"HOURTAB_SMTP_URL": None})
    assert no_smtp.exit_code == 2
    assert no_smtp.output == "Error: --notify mailto: needs HOURTAB_SMTP_URL (the SMTP server alert e-mails go " \
                             "through), and it is not set.\n"
    for odd in ("mailto:", "email:a@b.example,c@d.example", "mailto:me@example.com\nBcc: x@y.example"):
        refused = CliRunner().invoke(cli, ["watchdog", str(tmp_path), "--once", "--notify", odd],
                                     env={"HOURTAB_SMTP_URL": "smtp://127.0.0.1:25"})
        assert refused.exit_code == 2 and "--notify takes stdout" in refused.output, odd
    empty = CliRunner().invoke(cli, ["watchdog", str(tmp_path), "--once"])
    assert empty.exit_code == 0 and "No W&B run to read" in empty.output


def test_fastwatch_run_is_not_blamed_on_wandb_watch_costs(tmp_path):
    """A run that logged through incidents.tools.fastwatch has the same histograms, not wandb.watch's cost."""
    pytest.importorskip("transformers")
    import torch

    from incidents.evidence.wandb import load_run
    from incidents.tools import fastwatch
    from incidents.tools.audit.cost import load_calibration
    from incidents.tools.watchdog import observe
    from tests.helpers.wandb_runs import offline_wandb

    with offline_wandb(tmp_path):
        import wandb

        run = wandb.init(project="watchdog-fastwatch", dir=str(tmp_path))  # explicit: wandb keeps its first dir
        model = torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.Tanh(), torch.nn.Linear(12, 2))
        handle = fastwatch.watch(model, log="all", log_freq=1, run=run)
        for _ in range(4):
            model(torch.randn(5, 6)).sum().backward()
            handle.flush()
            run.log({"loss": 1.0})
        fastwatch.unwatch(model)
        run.finish()
    evidence = load_run(next((tmp_path / "wandb").glob("offline-run-*")))
    seen = observe(evidence, load_calibration())
    assert seen.histogram_interval == 1 and seen.estimated_share is None and not seen.finding.fired


def _grow(source: Path, tmp_path: Path, fraction: float) -> tuple[Path, Path, bytes]:
    """A copy of a finished run folder whose log holds only its first ``fraction`` of bytes (cut mid-record)."""
    import shutil

    folder = tmp_path / source.name
    shutil.copytree(source, folder)
    (log,) = folder.glob("run-*.wandb")
    data = log.read_bytes()
    log.write_bytes(data[:int(len(data) * fraction)])
    return folder, log, data


def test_poll_reads_only_what_was_appended_and_sees_what_a_full_read_sees(watched, tmp_path):
    from incidents.evidence.wandb.framing import BLOCK_SIZE
    from incidents.evidence.wandb.runfolder import read_run_folder
    from incidents.tools.audit.cost import load_calibration
    from incidents.tools.watchdog import Watchdog, observe

    folder, log, data = _grow(watched["folders"][0], tmp_path, 0.5)
    dog = Watchdog(folder, load_calibration(), lambda alert: None)
    first = dog.poll()
    cursor = dog.tail.cursor
    offset, records = cursor.offset, cursor.records
    assert 0 < offset <= len(data) // 2 and records > 0 and first.state == "unfinished"
    assert first.to_dict() == observe(read_run_folder(folder), load_calibration()).to_dict()

    log.write_bytes(data)                     # the SDK wrote the rest of the run
    second = dog.poll()
    assert cursor.offset == len(data)
    assert cursor.bytes_read <= len(data) - offset + BLOCK_SIZE   # not the first half again
    full = read_run_folder(folder)
    assert second.to_dict() == observe(full, load_calibration()).to_dict()
    assert second.state == "finished" and second.steps == full.steps > first.steps
    assert records + cursor.records == sum(1 for _ in _all_records(log))


def test_incremental_read_of_a_watched_run_matches_a_full_read(watched, tmp_path):
    """The run with watch histograms, grown one logged step at a time (each cut inside a history record)
    and read through the tail reader: after every piece it sees what a full read of the same bytes sees."""
    from incidents.evidence.wandb.records import iter_decoded
    from incidents.evidence.wandb.runfolder import fill_from_folder, read_run_folder
    from incidents.evidence.wandb.tail import LogTail
    from incidents.tools.audit.cost import load_calibration
    from incidents.tools.watchdog import observe

    folder, log, data = _grow(watched["folders"][1], tmp_path, 1.0)
    steps = [o for o, r in iter_decoded(log, []) if r.WhichOneof("record_type") == "history"]
    tail = LogTail(log)
    seen = []
    for cut in [o + 10 for o in steps] + [len(data)]:
        log.write_bytes(data[:cut])
        fresh = observe(read_run_folder(folder), load_calibration()).to_dict()
        assert observe(fill_from_folder(tail.read(), folder), load_calibration()).to_dict() == fresh
        seen.append(fresh["steps"])
    assert seen == [*range(len(steps)), len(steps)] and len(steps) >= 2
    assert tail.cursor.offset == len(data) and fresh["histogram_steps"] > 0


def _all_records(log: Path):
    from incidents.evidence.wandb.framing import iter_records

    return iter_records(log, [])
