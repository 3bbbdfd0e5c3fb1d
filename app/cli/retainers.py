"""``hourtab retainer create|edit|rotate-token`` and ``hourtab ledger``."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from app.cli.context import cli_session
from app.cli.edit import retainer_edit
from hourtab.core import accounts
from hourtab.core.db import transaction
from hourtab.retainers import ledger_reads, service
from hourtab.retainers.exports import period_json
from hourtab.retainers.matching import MatchRules
from hourtab.retainers.presentation import format_hours, headline
from hourtab.retainers.pricing import price_periods
from hourtab.retainers.totals import no_periods

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from hourtab.retainers.models import Retainer



@click.group("retainer")
def retainer_group() -> None:
    """Create retainers and manage their public links."""


@retainer_group.command("create")
@click.option("--account", "email", required=True, help="E-mail of the consultant's account.")
@click.option("--name", required=True, help="Retainer name the client sees.")
@click.option("--client", required=True, help="Client name (also the default match rule).")
@click.option("--hours", required=True, help="Hours per period, e.g. 20 or 12.5.")
@click.option("--period", type=click.Choice(["monthly", "weekly", "quarterly"]), default="monthly",
              show_default=True)
@click.option("--reset-day", type=int, default=None,
              help="Day of month the period resets (weekly: 1 = Monday … 7 = Sunday). Default: the start's.")
@click.option("--start", default=None, help="First day, YYYY-MM-DD (default: today).")
@click.option("--timezone", default=None, help="IANA time zone of the period boundaries (default: the account's).")
@click.option("--rollover-cap", default=None, help="Carry unused hours over, up to this many hours.")
@click.option("--rounding", type=click.Choice(["6", "15", "30"]), default=None,
              help="Round each entry up to this many minutes.")
@click.option("--fee", default=None, help="What a period costs, e.g. 3000 (needs --currency).")
@click.option("--rate", default=None, help="What an hour is worth, e.g. 150 (default: the fee over the hours).")
@click.option("--overage-rate", default=None, help="Hours over are billed at this rate (sets overage to bill).")
@click.option("--currency", default=None, help="ISO 4217 code of the fee and rates, e.g. EUR, USD, JPY.")
@click.option("--language", default="en", show_default=True,
              help="Language of the client's page, statement, invoice and e-mails: en, de, fr, es, pt or ja.")
@click.option("--match-client", "match_clients", multiple=True, help="Count entries of this client (repeatable).")
@click.option("--match-project", "match_projects", multiple=True,
              help="Count only entries of this project (repeatable).")
@click.option("--match-tag", "match_tags", multiple=True, help="Count only entries with this tag (repeatable).")
@click.option("--json", "as_json", is_flag=True, help='Print {"id", "public_url"} as JSON.')
def retainer_create(email: str, name: str, client: str, hours: str, period: str, reset_day: int | None,
                    start: str | None, timezone: str | None, rollover_cap: str | None, rounding: str | None,
                    fee: str | None, rate: str | None, overage_rate: str | None, currency: str | None,
                    language: str,
                    match_clients: tuple[str, ...], match_projects: tuple[str, ...], match_tags: tuple[str, ...],
                    as_json: bool) -> None:
    """Create a retainer (refused beyond the plan's limit) and print its public URL."""
    with cli_session() as cx:
        session = cx.session
        with transaction(session):
            account = accounts.get_account(session, email)
            terms = service.parse_terms(service.TermsInput(
                hours=hours, start=start, period=period, reset_day=reset_day,
                timezone=timezone or account.timezone or "UTC", rollover_cap=rollover_cap,
                rounding=rounding or account.rounding_min or 0, fee=fee, hourly_rate=rate, currency=currency,
                overage="bill" if overage_rate is not None else "carry", overage_rate=overage_rate))
            rules = MatchRules(clients=match_clients or (client,), projects=match_projects, tags=match_tags)
            retainer = service.create_retainer(session, account, name, client, terms, rules, language=language)
        url = cx.public_url(retainer.public_token)
        if as_json:
            click.echo(json.dumps({"id": retainer.id, "public_url": url}))
        else:
            click.echo(f"Created retainer {retainer.id} ({retainer.name}).\nPublic page: {url}")


@retainer_group.command("rotate-token")
@click.argument("retainer_id", type=int)
def retainer_rotate_token(retainer_id: int) -> None:
    """Replace the public link; the old URL returns 404 at once."""
    with cli_session() as cx:
        session = cx.session
        with transaction(session):
            retainer = _by_id(session, retainer_id)
            account = session.get_one(accounts.Account, retainer.account_id)
            retainer = service.rotate_token(session, account, retainer_id)
        click.echo(cx.public_url(retainer.public_token))


def _by_id(session: Session, retainer_id: int) -> Retainer:
    from hourtab.core.errors import NotFound
    from hourtab.retainers.models import Retainer

    retainer = session.get(Retainer, retainer_id)
    if retainer is None:
        raise NotFound(f"No retainer with id {retainer_id}.")
    return retainer


@click.command("ledger")
@click.argument("retainer_id", type=int)
@click.option("--json", "as_json", is_flag=True, help="Print the periods as JSON.")
def ledger_command(retainer_id: int, as_json: bool) -> None:
    """Show a retainer's ledger: per period opening, allotment, top-ups, adjustments, used, closing…"""
    with cli_session() as cx:
        retainer = _by_id(cx.session, retainer_id)
        ledger = ledger_reads.retainer_ledger(cx.session, retainer, entries=no_periods)
        if as_json:
            click.echo(json.dumps({
                "id": retainer.id, "name": retainer.name, "client": retainer.client,
                "public_url": cx.public_url(retainer.public_token), "headline": headline(ledger.current),
                "terms": retainer.terms().describe(),
                "periods": [period_json(p, money=m) for p, m in zip(ledger.periods, price_periods(ledger),
                                                                       strict=True)]},
                indent=2, ensure_ascii=False))
            return
        click.echo(f"{retainer.name} · {retainer.client}\n{headline(ledger.current)}\n")
        cols = ("Period", "Opening", "Allot.", "Top-ups", "Adjust.", "Used", "Closing", "Expired", "Over",
                "Billed")
        click.echo("  ".join(f"{c:>9}" if i else f"{c:<24}" for i, c in enumerate(cols)))
        for p in ledger.periods:
            figures = (p.opening_s, p.allotment_s, p.topups_s, p.adjustments_s, p.used_s, p.closing_s, p.expired_s,
                       p.overage_s, p.billed_s)
            label = p.period.label + (" *" if p.is_open else "")
            click.echo("  ".join([f"{label:<24}", *(f"{format_hours(f):>9}" for f in figures)]))
        click.echo("\nHours after per-entry rounding; * = open period.")


retainer_group.add_command(retainer_edit)

commands: list[click.Command] = [retainer_group, ledger_command]
