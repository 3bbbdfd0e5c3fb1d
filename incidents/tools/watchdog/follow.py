"""Follow the newest run under a ``wandb/`` folder while the SDK writes it, and notify once per finding.

Each poll reads what the SDK appended to the newest run folder's ``.wandb`` log since the previous
poll (``LogTail``: the byte offset after the last complete record and the records folded so far are
kept, and a record still being written waits for the next poll), and observes the run as it now
stands; a run folder that appears later becomes the one followed. A rule that fires is notified
once per run, and a draft-incident command is attached to it.

Polls stay cheap: an unchanged log is not read again, a run that has already raised its alert is
not read again (there is nothing more to say about it), and the wait between polls grows to three
times the last poll's work when the run gets large.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from incidents.errors import InvalidEvidence
from incidents.evidence.wandb.runfolder import fill_from_folder, is_run_folder, read_run_folder
from incidents.evidence.wandb.tail import LogTail
from incidents.tools.audit.cost import Calibration
from incidents.tools.watchdog.observe import Observation, observe

SCHEMA = "hourtab.watchdog/1"
RULES = ("watch_overhead",)
DRAFT_NOTE = ("the draft's own diagnosis confirms the cause once it holds a measurement: add a run without "
              "wandb.watch (--run baseline=RUN) or a profile (--profile profile.json from `hourtab repro`)")


def run_folders(root: Path) -> list[Path]:
    """Run folders directly under ``root`` or ``root/wandb``, oldest first (by the time in their name)."""
    found = []
    for parent in (root, root / "wandb"):
        if parent.is_dir():
            found += [p for p in parent.iterdir() if p.is_dir() and not p.is_symlink()
                      and p.name.startswith(("run-", "offline-run-"))]
    return sorted(found, key=lambda p: (p.name.split("run-", 1)[1], p.stat().st_mtime))


def newest_run(root: Path) -> Path | None:
    """The newest run folder that already holds its log (``root`` itself when it is one)."""
    if root.name.startswith(("run-", "offline-run-")) and is_run_folder(root):
        return root
    for folder in reversed(run_folders(root)):
        if is_run_folder(folder):
            return folder
    return None


def draft_command(folder: Path, account: str | None, rule: str) -> str:
    """The ``hourtab incident build`` command that starts a draft incident with this run attached."""
    title = f"{rule.replace('_', ' ')} in W&B run {folder.name.rsplit('-', 1)[-1]}"
    return shlex.join(["hourtab", "incident", "build", "--account", account or "YOU@EXAMPLE.COM",
                       "--title", title, "--run", f"incident={folder}"])


@dataclass
class Watchdog:
    """Polls ``root``; ``notify`` receives one alert per (run, rule) that fires."""

    root: Path
    calibration: Calibration
    notify: Callable[[dict[str, Any]], None]
    account: str | None = None
    notified: set[tuple[str, str]] = field(default_factory=set)
    followed: Path | None = None
    alerts: list[dict[str, Any]] = field(default_factory=list)
    last: Observation | None = None
    read_s: float = 0.0
    _stamp: tuple[Any, ...] | None = None
    tail: LogTail | None = None

    def poll(self) -> Observation | None:
        """Look at the newest run once; notify a newly fired rule. None while there is nothing to read."""
        folder = newest_run(self.root)
        if folder is None:
            return None
        if folder != self.followed:
            self.followed, self.last, self._stamp, self.tail = folder, None, None, None
        logs = sorted(folder.glob("run-*.wandb"))
        stamp = tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in logs)
        done = self.last is not None and all((self.last.run_id, rule) in self.notified for rule in RULES)
        if stamp == self._stamp or done:
            return self.last
        started = time.monotonic()
        try:
            run = self._read(folder, logs)
        except InvalidEvidence:  # the SDK has created the file but not yet written its header
            return None
        observation = observe(run, self.calibration)
        self.read_s = time.monotonic() - started
        self._stamp, self.last = stamp, observation
        finding = observation.finding
        key = (run.run_id or folder.name, finding.rule)
        if finding.fired and key not in self.notified:
            self.notified.add(key)
            alert = {"schema": SCHEMA, "run_id": key[0], "run_folder": str(folder),
                     "at_step": observation.last_step, "run_state": observation.state,
                     **finding.to_dict(), "draft_incident": draft_command(folder, self.account, finding.rule),
                     "draft_note": DRAFT_NOTE}
            self.alerts.append(alert)
            self.notify(alert)
        return observation

    def _read(self, folder: Path, logs: list[Path]) -> Any:
        """The run as it now stands: the new records of its one log, or the whole folder otherwise."""
        if len(logs) != 1:
            return read_run_folder(folder)
        if self.tail is None or self.tail.path != logs[0]:
            self.tail = LogTail(logs[0])
        return fill_from_folder(self.tail.read(), folder)

    def follow(self, poll_s: float = 2.0, stop: Callable[[], bool] = lambda: False,
               on_poll: Callable[[Observation | None], None] | None = None) -> None:
        """Poll until ``stop()`` says so (Ctrl-C in the CLI)."""
        while not stop():
            observation = self.poll()
            if on_poll is not None:
                on_poll(observation)
            time.sleep(max(poll_s, 3 * self.read_s))
