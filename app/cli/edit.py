"""``hourtab retainer edit ID``: the options of ``create``, each optional; a change to a closed period
is printed as a preview and applied only with ``--yes`` (exit 2 otherwise, nothing changed)."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace
from typing import Any

import click
from sqlalchemy.orm import Session

from app.cli.context import cli_session
from hourtab.core import accounts
from hourtab.core.db import transaction
from hourtab.core.errors import NotFound
from hourtab.retainers import changes, service, versions
from hourtab.retainers.currency import check_currency, parse_amount
from hourtab.retainers.matching import MatchRules
from hourtab.retainers.models import Retainer
from hourtab.retainers.periods import local_date
from hourtab.retainers.terms import InvalidTerms, Overage, Rollover, Rounding, Terms, hours_to_seconds

YES_HINT = "run it again with --yes to apply it"


def _retainer(session: Session, retainer_id: int, email: str | None) -> Retainer:
    retainer = session.get(Retainer, retainer_id)
    if retainer is None or (email and retainer.account_id != accounts.get_account(session, email).id):
        raise NotFound(f"No retainer with id {retainer_id}" + (f" in the account {email}." if email else "."))
    return retainer


def _date(value: str | None, what: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(value) if value else None
    except ValueError as e:
        raise click.BadParameter(f"{value!r} is not a date like 2026-01-01.", param_hint=what) from e


def edited_terms(current: Terms, hours: str | None, period: str | None, reset_day: int | None, start: str | None,
                 timezone: str | None, rollover_cap: str | None, rounding: str | None,
                 money: dict[str, str | None] | None = None) -> Terms | None:
    """``current`` with the given options replaced (``None`` when none is given); ``money``: the
    ``fee``, ``rate``, ``overage_rate`` and ``currency`` options as typed."""
    given = {"allotment_s": hours_to_seconds(hours, "hours per period") if hours is not None else None,
             "period": period, "reset_day": reset_day, "start": _date(start, "--start"), "timezone": timezone}
    changed: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    if rollover_cap is not None:
        changed.update(rollover=Rollover.CAP, rollover_cap_s=hours_to_seconds(rollover_cap, "the rollover cap"))
    if rounding is not None:
        changed["rounding"] = Rounding(int(rounding), current.rounding.mode, current.rounding.minimum_min)
    changed.update(edited_money(current, money or {}))
    return replace(current, **changed) if changed else None


def edited_money(current: Terms, money: dict[str, str | None]) -> dict[str, Any]:
    """The money options given, each amount read in the currency given or the current one."""
    if all(v is None for v in money.values()):
        return {}
    currency = money.get("currency") or current.currency
    if currency is None:
        raise InvalidTerms("A fee or a rate needs its currency: add --currency (an ISO 4217 code such as EUR).")
    currency = check_currency(currency)
    changed: dict[str, Any] = {"currency": currency}
    for option, name in (("fee", "fee"), ("rate", "hourly_rate"), ("overage_rate", "overage_rate")):
        if money.get(option) is not None:
            changed[name] = parse_amount(money[option], currency, name.replace("_", " "))
    if money.get("overage_rate") is not None:
        changed["overage"] = Overage.BILL
    for name in ("fee", "hourly_rate"):  # amounts kept from before must fit a new currency's minor unit
        if name not in changed and getattr(current, name) is not None:
            changed[name] = parse_amount(getattr(current, name), currency, name.replace("_", " "))
    return changed


def edited_rules(current: MatchRules, clients: tuple[str, ...], projects: tuple[str, ...],
                 tags: tuple[str, ...]) -> MatchRules | None:
    """Each list given replaces that list of ``current`` (an empty name clears it); ``None`` when none is."""
    if not (clients or projects or tags):
        return None
    return MatchRules(clients=clients or current.clients, projects=projects or current.projects,
                      tags=tags or current.tags, billable=current.billable)


def _print(preview: changes.ChangePreview, as_json: bool, applied: bool, retainer_id: int) -> None:
    if as_json:
        click.echo(json.dumps({"id": retainer_id, "applied": applied, "preview": preview.as_json()}, ensure_ascii=False))
        return
    for line in preview.lines():
        click.echo(line)


@click.command("edit")
@click.argument("retainer_id", type=int)
@click.option("--account", "email", default=None, help="E-mail of the consultant's account (checked, optional).")
@click.option("--name", default=None, help="Retainer name the client sees.")
@click.option("--client", default=None, help="Client name.")
@click.option("--hours", default=None, help="Hours per period, e.g. 20 or 12.5 (from --effective-from on).")
@click.option("--period", type=click.Choice(["monthly", "weekly", "quarterly"]), default=None)
@click.option("--reset-day", type=int, default=None, help="Day of month the period resets (weekly: 1–7).")
@click.option("--start", default=None, help="First day, YYYY-MM-DD.")
@click.option("--timezone", default=None, help="IANA time zone of the period boundaries.")
@click.option("--rollover-cap", default=None, help="Carry unused hours over, up to this many hours.")
@click.option("--rounding", type=click.Choice(["0", "6", "15", "30"]), default=None,
              help="Round each entry up to this many minutes (0 = none).")
@click.option("--fee", default=None, help="What a period costs, e.g. 3000 (from --effective-from on).")
@click.option("--rate", default=None, help="What an hour is worth, e.g. 150 (from --effective-from on).")
@click.option("--overage-rate", default=None, help="Hours over are billed at this rate (sets overage to bill).")
@click.option("--currency", default=None, help="ISO 4217 code of the fee and rates, e.g. EUR, USD, JPY.")
@click.option("--language", default=None,
              help="Language of the client's page, statement, invoice and e-mails: en, de, fr, es, pt or ja.")
@click.option("--match-client", "match_clients", multiple=True,
              help="Count entries of this client (repeatable; replaces the clients; '' clears them).")
@click.option("--match-project", "match_projects", multiple=True,
              help="Count only entries of this project (repeatable; replaces the projects; '' clears them).")
@click.option("--match-tag", "match_tags", multiple=True,
              help="Count only entries with this tag (repeatable; replaces the tags; '' clears them).")
@click.option("--effective-from", default=None, help="New hours apply from the period containing this day.")
@click.option("--yes", is_flag=True, help="Apply a change that revises closed periods (it is previewed otherwise).")
@click.option("--json", "as_json", is_flag=True, help='Print {"id", "applied", "preview"} as JSON.')
def retainer_edit(retainer_id: int, email: str | None, name: str | None, client: str | None, hours: str | None,
                  period: str | None, reset_day: int | None, start: str | None, timezone: str | None,
                  rollover_cap: str | None, rounding: str | None, fee: str | None, rate: str | None,
                  overage_rate: str | None, currency: str | None, language: str | None, match_clients: tuple[str, ...],
                  match_projects: tuple[str, ...], match_tags: tuple[str, ...], effective_from: str | None,
                  yes: bool, as_json: bool) -> None:
    """Change a retainer's names, language, terms or rules; a change to a closed period needs --yes."""
    with cli_session() as cx:
        session = cx.session
        retainer = _retainer(session, retainer_id, email)
        account = session.get(accounts.Account, retainer.account_id)
        assert account is not None  # a retainer's account is removed with it (ON DELETE CASCADE)
        today = local_date(dt.datetime.now(dt.UTC), retainer.terms().tz)
        terms = edited_terms(versions.in_force(session, retainer, today), hours, period, reset_day, start,
                             timezone, rollover_cap, rounding,
                             {"fee": fee, "rate": rate, "overage_rate": overage_rate, "currency": currency})
        rules = edited_rules(retainer.rules(), match_clients, match_projects, match_tags)
        since = _date(effective_from, "--effective-from")
        try:
            with transaction(session):
                _, preview = changes.apply(session, account.id, lambda: service.update_retainer(
                    session, account, retainer_id, name=name, client=client, terms=terms, rules=rules,
                    effective_from=since, language=language), confirm=True if yes else None,
                    moves=service.moves_entries(retainer, rules))
        except changes.NeedsConfirmation as e:
            _print(e.preview, as_json, False, retainer_id)
            raise changes.NeedsConfirmation(e.preview, hint=YES_HINT) from None
        _print(preview, as_json, True, retainer_id)
        if not as_json:
            click.echo(f"Saved retainer {retainer_id}.")
