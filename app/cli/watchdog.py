"""``hourtab watchdog``: follow live W&B runs and flag watch overhead within the first steps."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from app.config import DEFAULTS
from hourtab.core.errors import InvalidInput

if TYPE_CHECKING:
    from incidents.tools.watchdog import Watchdog

STATUS_EVERY_S = 10.0


def _status(observation: Any, folder: Path | None) -> str:
    o = observation
    step = "n/a" if o.step_s is None else f"{o.step_s:.3g} s/step"
    hist = f"histograms every {o.histogram_interval} step(s), {o.tensors} tensors" if o.histogram_interval \
        else f"{o.histogram_steps} histogram step(s)"
    gpu = "GPU n/a" if o.gpu_util is None else f"GPU {o.gpu_util:.0f} %"
    return f"{folder.name if folder else o.run_id}: step {o.last_step}, {step}, {hist}, {gpu} ({o.state})"


@click.command("watchdog")
@click.argument("wandb_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option("--once", is_flag=True, help="Analyse what is there now and exit (1 when a rule fired).")
@click.option("--json", "as_json", is_flag=True, help="JSON output (with --once one document, else one alert a line).")
@click.option("--notify", "notify_to", multiple=True, metavar="stdout|URL|mailto:ADDRESS",
              help="Where alerts go: stdout (default), a webhook URL (JSON POST) or an e-mail address "
                   "(through HOURTAB_SMTP_URL); repeatable.")
@click.option("--account", help="E-mail to put in the printed `hourtab incident build` command.")
@click.option("--poll", "poll_s", type=click.FloatRange(min=0.1), default=2.0, show_default=True,
              help="Seconds between looks at the run.")
@click.option("--max-seconds", type=click.FloatRange(min=0), help="Stop after this long (default: until Ctrl-C).")
@click.option("--calibration", type=click.Path(path_type=Path, dir_okay=False),
              help="Watch calibration file (default: the data dir's, else the shipped one).")
def watchdog(wandb_dir: Path, once: bool, as_json: bool, notify_to: tuple[str, ...], account: str | None,
             poll_s: float, max_seconds: float | None, calibration: Path | None) -> None:
    """Follow the newest run under WANDB_DIR while it trains; alert once per run when wandb.watch dominates."""
    from incidents.tools.audit.cost import load_calibration
    from incidents.tools.watchdog import Watchdog
    from incidents.tools.watchdog.notify import alert_text, notify_targets

    if not wandb_dir.is_dir():
        raise InvalidInput(f"{wandb_dir.name}: no such folder.")
    # A bad --notify target or calibration is refused input: the root group prints it and exits 2.
    sinks = notify_targets(notify_to, os.environ.get("HOURTAB_SMTP_URL", ""),
                           os.environ.get("HOURTAB_MAIL_FROM") or DEFAULTS["HOURTAB_MAIL_FROM"])
    dog = Watchdog(wandb_dir, load_calibration(calibration), lambda alert: None, account)

    def notify(alert: dict[str, Any]) -> None:
        for _name, send in sinks:
            if send is None:
                click.echo(json.dumps(alert, default=str) if as_json else alert_text(alert))
            elif (error := send(alert)) is not None:
                click.echo(f"warning: {error}", err=True)

    if once:
        _poll_once(dog, sinks, wandb_dir, as_json)
    dog.notify = notify
    _follow(dog, poll_s, max_seconds, as_json)


def _poll_once(dog: Watchdog, sinks: list[tuple[str, Any]], wandb_dir: Path, as_json: bool) -> NoReturn:
    """``--once``: one look at the run, its alerts sent, exit 1 when there were any."""
    from incidents.tools.watchdog.notify import alert_text

    observation = dog.poll()
    if as_json:
        click.echo(json.dumps({"schema": "hourtab.watchdog/1", "run_folder": str(dog.followed) if dog.followed
                               else None, "observation": observation.to_dict() if observation else None,
                               "alerts": dog.alerts}, indent=2, default=str))
    elif observation is None:
        click.echo(f"No W&B run to read under {wandb_dir.name} yet.")
    else:
        click.echo(_status(observation, dog.followed))
        click.echo("\n".join(alert_text(a) for a in dog.alerts) if dog.alerts
                   else f"[ok] {observation.finding.verdict}")
    for alert in dog.alerts:
        for _name, send in sinks:
            if send is not None and (error := send(alert)) is not None:
                click.echo(f"warning: {error}", err=True)
    sys.exit(1 if dog.alerts else 0)


def _follow(dog: Watchdog, poll_s: float, max_seconds: float | None, as_json: bool) -> None:
    """Follow the run until Ctrl-C or ``max_seconds``, with a status line on stderr now and then."""
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    last: dict[str, Any] = {"at": 0.0, "step": None}

    def on_poll(observation: Any) -> None:
        if as_json or observation is None:
            return
        now = time.monotonic()
        if observation.last_step != last["step"] and now - last["at"] >= STATUS_EVERY_S:
            click.echo(_status(observation, dog.followed), err=True)
            last.update(at=now, step=observation.last_step)

    try:
        dog.follow(poll_s, stop=lambda: deadline is not None and time.monotonic() >= deadline, on_poll=on_poll)
    except KeyboardInterrupt:
        pass
    if not as_json:
        click.echo(f"Stopped: {len(dog.alerts)} alert(s).", err=True)


commands: list[click.Command] = [watchdog]
