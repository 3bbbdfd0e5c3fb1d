"""``hourtab csv inspect`` (no database) and ``hourtab import`` (into an account's entries).

Exit status: 0 when the file parses (warnings allowed), 2 when it has errors or its day/month
order is ambiguous (the message names ``--date-order``) or the account is unknown; errors are
mapped to exit codes by the root group (``app/cli/errors.py``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hourtab.core.errors import InvalidInput
from hourtab.timesheets.detect import FORMAT_NAMES
from hourtab.timesheets.errors import (
    AmbiguousDateOrder,
    CsvRowError,
    CsvTooLarge,
    RowsRejected,
    TimesheetError,
)
from hourtab.timesheets.report import INSPECT_KEYS, ReadReport

if TYPE_CHECKING:
    from sqlalchemy.orm import Session



DATE_ORDERS = ("dmy", "mdy")


def max_bytes_from_env() -> int:
    """HOURTAB_CSV_MAX_MB, read here too because ``csv inspect`` needs no data folder nor database."""
    try:
        return int(float(os.environ.get("HOURTAB_CSV_MAX_MB", "50")) * 1024 * 1024)
    except ValueError as e:
        raise InvalidInput("HOURTAB_CSV_MAX_MB must be a number of MiB.") from e


def _read_limited(path: Path, limit: int) -> bytes:
    size = path.stat().st_size
    if size > limit:
        raise CsvTooLarge(size, limit)
    return path.read_bytes()


def _error_payload(error: TimesheetError) -> dict:
    """The inspect JSON for a file that could not be read at all (every key present)."""
    report = getattr(error, "report", None)
    payload = dict.fromkeys(INSPECT_KEYS)
    payload.update({"rows": 0, "entries": 0, "total_seconds": 0, "total_hours": 0.0, "clients": [],
                    "projects": [], "warnings": []})
    if report is not None:
        payload.update(report.as_json())
    if isinstance(error, AmbiguousDateOrder):
        issues: list[dict[str, Any]] = [{"line": None, "column": ", ".join(error.columns),
                   "value": ", ".join(e.value for e in error.examples[:3]), "message": str(error)}]
    elif isinstance(error, RowsRejected):
        issues = [{"line": i.line, "column": i.column, "value": i.value, "message": i.message} for i in error.issues]
    elif isinstance(error, CsvRowError):
        issues = [{"line": error.line, "column": error.column, "value": error.value, "message": str(error)}]
    else:
        issues = [{"line": None, "column": "", "value": "", "message": str(error)}]
    payload["errors"] = issues
    return payload


@contextmanager
def _json_errors(as_json: bool) -> Iterator[None]:
    """With ``--json``, a refused file still prints the full JSON shape before the error line."""
    try:
        yield
    except TimesheetError as e:
        if as_json:
            click.echo(json.dumps(_error_payload(e), ensure_ascii=False))
        raise


def _entries(n: int) -> str:
    return f"{n} entr{'y' if n == 1 else 'ies'}"


def _print_report(report: ReadReport) -> None:
    click.echo(f"{report.explanation}")
    rows = f"{report.rows} row{'' if report.rows == 1 else 's'}"
    dates = (f"{report.first_date} to {report.last_date}" if report.first_date and report.last_date
             else "no dates (no row could be read as an entry)")
    click.echo(f"{_entries(report.entries)} of {rows}, {report.total_seconds} s ({report.total_hours} h), {dates}")
    if report.clients:
        click.echo("Clients: " + ", ".join(report.clients))
    if report.projects:
        click.echo("Projects: " + ", ".join(report.projects))
    for w in report.warnings:
        click.echo(f"warning: {w}")
    for e in report.errors[:50]:
        click.echo(f"error: {e}", err=True)
    if len(report.errors) > 50:
        click.echo(f"error: … {len(report.errors) - 50} more", err=True)


def _print_diff(diff: dict) -> None:
    """What a dry run would change, row by row (the web preview shows the same)."""
    for row in diff["changed"]:
        changes = "; ".join(f"{c['field']}: {c['old'] or '(empty)'} → {c['new'] or '(empty)'}" for c in row["changes"])
        click.echo(f"changed  line {row['line']}, {row['date']} {row['client']} / {row['project']}: {changes}")
    for row in diff["removal"]:
        click.echo(f"not in the export  {row['date']} {row['client']} / {row['project']} · {row['description']} "
                   f"· {row['duration']}")
    if diff["removal_count"]:
        click.echo(f"{_entries(diff['removal_count'])} ({diff['removal_hours']} h) would be flagged for removal "
                   f"(covered: {diff['scope']}); they keep counting until removed "
                   f"(hourtab entries remove UPLOAD_ID).")


def _print_routing(routing: dict) -> None:
    """Where the entries count (the web preview's table): per retainer, unassigned, by default."""
    for r in routing["retainers"]:
        extra = f", {r['default_entries']} without client or project" if r["default_entries"] else ""
        revised = "; revises " + ", ".join(f"{v['period']} ({v['was_hours']} → {v['hours']} h)"
                                           for v in r["revises"]) if r["revises"] else ""
        click.echo(f"retainer {r['id']} {r['name']}: {_entries(r['entries'])}{extra}, {r['hours']} h; "
                   f"balance {r['balance_before']} → {r['balance_after']} h ({r['period']}){revised}")
    nowhere = routing["unassigned"]
    if nowhere["entries"]:
        groups = ", ".join(f"{g['client'] or '(no client)'} / {g['project'] or '(no project)'} {g['hours']} h"
                           for g in nowhere["groups"])
        click.echo(f"matching no retainer: {_entries(nowhere['entries'])}, {nowhere['hours']} h ({groups})")


@click.group("csv")
def csv_group() -> None:
    """Read time-tracker CSV exports without touching the database."""


@csv_group.command("inspect")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(FORMAT_NAMES), default="auto", show_default=True,
              help="The tracker that wrote the file; auto-detected from the header by default.")
@click.option("--date-order", type=click.Choice(DATE_ORDERS), default=None,
              help="Day/month order when the file cannot tell (no day above 12).")
@click.option("--timezone", default="UTC", show_default=True, help="IANA time zone of the export's times.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def inspect(file: Path, fmt: str, date_order: str | None, timezone: str, as_json: bool) -> None:
    """Parse FILE and report format, totals, warnings and errors (exit 2 on errors)."""
    from hourtab.timesheets.reader import read_timesheet

    with _json_errors(as_json):
        data = _read_limited(file, max_bytes_from_env())  # the one size check: before the file is read
        _, report = read_timesheet(data, format=fmt, date_order=date_order, timezone=timezone,
                                   max_bytes=None, fingerprints=False)
    if as_json:
        click.echo(json.dumps(report.as_json(), ensure_ascii=False))
    else:
        _print_report(report)
    if report.errors:  # the report above is the explanation; the status tells scripts it has errors
        click.get_current_context().exit(2)


def _queue_alert_check(session: Session, account_id: int, settings: dict) -> None:
    """After an import: an alert check, queued only where e-mail is set up (as the app does). Only
    then is the app built: its queue holds the job handlers, and building it costs seconds."""
    if not settings.get("SMTP_URL"):
        return
    from app.cli.context import queue_app
    from app.jobs.alerts import queue_alert_check

    with queue_app() as app:  # the job row is committed before it is queued
        queue_alert_check(app, session, account_id)


@click.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--account", "email", required=True, help="E-mail of the account to import into.")
@click.option("--retainer", "retainer_id", type=int, default=None,
              help="Retainer that entries with no client and no project count against.")
@click.option("--dry-run", is_flag=True, help="Report what would change; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.option("--format", "fmt", type=click.Choice(FORMAT_NAMES), default="auto", show_default=True)
@click.option("--date-order", type=click.Choice(DATE_ORDERS), default=None,
              help="Day/month order when the file cannot tell.")
@click.option("--timezone", default=None,
              help="IANA time zone of the export's clock (default: the tracker profile's from a connection, "
                   "else the account's).")
@click.option("--profile", default=None, help="Saved import profile (column mapping) to read the file with.")
@click.option("--skip-invalid", is_flag=True, help="Import the valid rows; keep the bad ones in the report.")
@click.option("--yes", is_flag=True, help="Import even where that revises closed periods (listed, and refused, otherwise).")
def import_command(file: Path, email: str, retainer_id: int | None, dry_run: bool, as_json: bool, fmt: str,
                   date_order: str | None, timezone: str | None, profile: str | None, skip_invalid: bool,
                   yes: bool) -> None:
    """Import FILE into the account's time entries (idempotent; exit 2 on errors)."""
    from app.cli.context import cli_session
    from app.cli.edit import YES_HINT
    from hourtab.core import accounts
    from hourtab.core.db import transaction
    from hourtab.imports.uploads import stage_and_import
    from hourtab.retainers.changes import NeedsConfirmation

    with cli_session() as cx:
        session = cx.session
        limit = int(cx.settings["CSV_MAX_BYTES"])
        account = accounts.get_account(session, email)
        try:
            with _json_errors(as_json), open(file, "rb") as stream, transaction(session):
                # Streamed into the blob store (its size checked as it streams), parsed once, then imported.
                result = stage_and_import(session, account, stream, file.name, cx.blobs, format=fmt,
                                          date_order=date_order, timezone=timezone, profile=profile,
                                          skip_invalid=skip_invalid, dry_run=dry_run, retainer_id=retainer_id,
                                          created_by=f"cli:{os.environ.get('USER', '')}", max_bytes=limit,
                                          confirmed=True if yes else None)
                if not dry_run:
                    _queue_alert_check(session, account.id, cx.settings)
        except NeedsConfirmation as e:  # nothing was imported: say what it would revise
            for line in e.preview.lines():
                click.echo(line)
            raise NeedsConfirmation(e.preview, hint=YES_HINT) from None
    if as_json:
        click.echo(json.dumps(result.as_json(), ensure_ascii=False))
        return
    verb = "Would import" if dry_run else f"Imported upload {result.upload_id}:"
    c = result.counts()
    click.echo(f"{verb} {result.report.entries} entries ({result.report.explanation}): {c['new']} new, "
               f"{c['unchanged']} unchanged, {c['changed']} changed, {c['missing']} missing upstream, "
               f"{c['skipped']} skipped.")
    click.echo(f"Times read as {result.report.timezone} ({result.report.timezone_why}).")
    if result.report.zone_warning:
        click.echo(f"warning: {result.report.zone_warning}")
    if result.routing:
        _print_routing(result.routing)
    if result.diff:
        _print_diff(result.diff)
    for w in result.report.warnings + result.notes:
        click.echo(f"warning: {w}")


commands: list[click.Command] = [csv_group, import_command]
