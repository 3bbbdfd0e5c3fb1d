"""``hourtab incident build|diagnose|render``: incident writeups from the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from app.cli.context import cli_session
from hourtab.core.errors import InvalidInput

if TYPE_CHECKING:
    from incidents.writeups.report.build import Report



def _kpis(report: Report) -> dict:
    """The KPI strip as JSON: each figure's value, its text as shown, and its source."""
    out = {}
    for kpi in report.kpis:
        key = kpi.label.split(" (")[0].lower().replace(" → ", "_").replace(" ", "_").replace("-", "_")
        for part, fig in (("before", kpi.before), ("after", kpi.after)):
            if fig is None:
                continue
            name = key if kpi.after is None else f"{key}:{part}"
            out[name] = {"value": fig.value, "text": fig.text, "source": fig.source or None}
    # Kept for the JSON's readers since the strip moved to median steps: the runs' mean step times.
    from incidents.diagnosis import signals

    for part, run in (("before", report.comparison.before), ("after", report.comparison.after)):
        value, source = signals.mean_step_time(run) if run is not None else (None, "no run")
        out[f"mean_step_time_before_after:{part}"] = {"value": value, "text": f"{value:.4g} s" if value else source,
                                                      "source": source if value else None}
    return out


def _undetermined(report: Report) -> list[dict]:
    return [{k: v for k, v in f.to_dict().items() if k in ("rule", "verdict", "evidence")}
            for f in report.findings if f.undetermined]


def _write_outputs(report: Report, pdf: Path | None, html: Path | None) -> None:
    from incidents.writeups.document import document_bytes

    if html:
        html.write_bytes(document_bytes(report, "html"))
    if pdf:
        pdf.write_bytes(document_bytes(report, "pdf"))


def _role_path(value: str) -> tuple[str, Path]:
    role, sep, path = value.partition("=")
    if not sep or not path:
        raise click.BadParameter(f"expected ROLE=PATH (role: incident, baseline or fixed), not {value!r}")
    return role.strip(), Path(path)


@click.group("incident")
def incident_group() -> None:
    """Incident writeups: build from run folders and profiles, diagnose a run, render a PDF."""


@incident_group.command("build")
@click.option("--account", "email", required=True, help="E-mail of the consultant account.")
@click.option("--title", required=True)
@click.option("--run", "runs", multiple=True, required=True, metavar="ROLE=PATH",
              help="A run folder, .wandb file, archive or export, in role incident, baseline or fixed.")
@click.option("--profile", "profiles", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="profile.json from `hourtab repro`, a key_averages table, or a chrome trace.")
@click.option("--retainer", "retainer_id", type=int, default=None)
@click.option("--entries-tag", default=None, help="Attach the time entries carrying this tag.")
@click.option("--pdf", "pdf", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.option("--html", "html", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.option("--json", "as_json", is_flag=True)
def build(email: str, title: str, runs: tuple[str, ...], profiles: tuple[Path, ...], retainer_id: int | None,
          entries_tag: str | None, pdf: Path | None, html: Path | None, as_json: bool) -> None:
    """Build a draft incident from files and print its diagnosis, KPIs and log entry."""
    from hourtab.core.accounts import get_account
    from hourtab.core.db import transaction
    from incidents.writeups import service

    pairs = [_role_path(r) for r in runs]
    for out in (pdf, html):
        # Checked before anything is stored, so a typo in the folder leaves no draft behind.
        if out is not None and not out.parent.is_dir():
            raise InvalidInput(f"{out.parent.name or out.parent} is not a folder: create it or choose another "
                               f"path for {out.name}.")
    with cli_session() as cx:
        session = cx.session
        account = get_account(session, email)
        with transaction(session):
            incident, report = service.build_incident(session, account, title, pairs, cx.blobs,
                                                      profiles=profiles, retainer_id=retainer_id,
                                                      entries_tag=entries_tag)
        _write_outputs(report, pdf, html)
        result = {"id": incident.id,
                  "diagnosis": [{k: v for k, v in f.to_dict().items() if k in ("rule", "verdict", "evidence",
                                                                            "confidence")}
                                for f in report.fired],
                  "kpis": _kpis(report), "log_entry": incident.log_entry,
                  # Symptoms whose cause the evidence cannot decide, each with what would decide it.
                  "undetermined": _undetermined(report)}
    if as_json:
        click.echo(json.dumps(result, indent=2, default=str, allow_nan=False))
        return
    click.echo(f"Incident {result['id']} (draft): {title}")
    for f in report.fired:
        click.echo(f"- {f.rule}: {f.verdict}")
    for f in report.findings:
        if f.undetermined:
            click.echo(f"- {f.rule} (not determined): {f.verdict}")
    if not report.fired:
        click.echo("- no rule fired")
    click.echo("\n" + incident.log_entry)
    from incidents.writeups.report.publish_checks import publish_warnings

    for warning in publish_warnings(report):
        click.echo(f"Before publishing: {warning}", err=True)


@incident_group.command("diagnose")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True)
def diagnose_cmd(path: Path, as_json: bool) -> None:
    """Run every diagnosis rule on one run folder or export; fired or not, each is reported."""
    from incidents.diagnosis import diagnose
    from incidents.evidence.wandb import load_run

    # Unreadable evidence is refused input (exit 2), as for `hourtab wandb inspect`.
    findings = diagnose(load_run(path))
    if as_json:
        click.echo(json.dumps({"diagnosis": [f.to_dict() for f in findings]}, indent=2, default=str))
        return
    for f in findings:
        mark = "FIRED" if f.fired else "open" if f.undetermined else "ok"
        click.echo(f"[{mark:5}] {f.rule} ({f.cls}): {f.verdict}")
        if f.undetermined:
            for item in f.evidence.get("would_decide", []):
                click.echo(f"        would decide it: {item}")


@incident_group.command("render")
@click.argument("incident_id", type=int)
@click.option("--pdf", "pdf", type=click.Path(dir_okay=False, path_type=Path), required=True)
def render_incident(incident_id: int, pdf: Path) -> None:
    """Render a stored incident (draft or published) to a PDF file."""
    from incidents.errors import EvidenceNotFound
    from incidents.writeups import service
    from incidents.writeups.models import Incident

    with cli_session() as cx:
        session = cx.session
        incident = session.get(Incident, incident_id)
        if incident is None:
            raise EvidenceNotFound(f"incident {incident_id} not found")
        pdf.write_bytes(service.incident_document(session, incident, cx.blobs, "pdf"))
    click.echo(f"Wrote {pdf}")


commands: list[click.Command] = [incident_group]
