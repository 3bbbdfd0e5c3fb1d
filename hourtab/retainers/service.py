"""Retainer services: create within the plan's limit, change terms, public tokens, matching (credits in
``credits``, reading the figures in ``ledger_reads``).

Every function that writes takes the session first and never commits: callers wrap it in
``with transaction(session):`` so a refused change leaves nothing behind. Each change that alters
what the client sees bumps ``Retainer.revision``, which is what public-page caches key on.
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from sqlalchemy import exists, func, select
from sqlalchemy.orm import Session

from hourtab.core.accounts import Account, lock_account
from hourtab.core.errors import InvalidInput, NotFound
from hourtab.core.i18n import DEFAULT_LANGUAGE, check_language
from hourtab.core.scoping import get_owned, select_owned
from hourtab.core.values import MAX_RATE, xml_safe
from hourtab.retainers import plans
from hourtab.retainers.assign import bump_page_version, route_entries
from hourtab.retainers.counted_entries import entries_frame  # noqa: F401 - read through the service too
from hourtab.retainers.currency import check_currency, parse_amount
from hourtab.retainers.days import rezone
from hourtab.retainers.errors import PlanLimitReached
from hourtab.retainers.kept_totals import keep_rules, rebuild
from hourtab.retainers.matching import MatchRules
from hourtab.retainers.models import Retainer, retainer_entries
from hourtab.retainers.periods import local_date
from hourtab.retainers.revisions import watch_closed_periods
from hourtab.retainers.terms import (
    InvalidTerms,
    Overage,
    PeriodKind,
    Rollover,
    Rounding,
    RoundingMode,
    Terms,
    choice,
    hours_to_seconds,
)
from hourtab.retainers.versions import add_version, schedule_change, terms_schedule
from hourtab.timesheets.models import TimeEntry

#: 24 random bytes = 192 bits from ``secrets``; URL-safe base64 gives 32 characters.
TOKEN_BYTES = 24
TOKEN_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def plausible_token(token: str) -> bool:
    """Cheap shape check before touching the database (our tokens are 32 URL-safe characters)."""
    return 20 <= len(token) <= 64 and set(token) <= TOKEN_ALPHABET


@dataclass(frozen=True)
class TermsInput:
    """Terms as people type them (hours as text, optional fields as ``None``)."""

    hours: str
    start: dt.date | str | None = None
    period: str = "monthly"
    reset_day: int | str | None = None
    timezone: str = "UTC"
    rollover: str = "none"
    rollover_cap: str | None = None
    rollover_expiry_periods: int | str | None = None
    overage: str = "carry"
    overage_rate: str | None = None
    rounding: int | str | None = 0
    rounding_mode: str = "up"
    minimum: int | str | None = 0
    fee: str | None = None
    currency: str | None = None
    hourly_rate: str | None = None


def _int(value: object, what: str) -> int | None:
    if value is None or str(value).strip() == "":
        return None
    try:
        number = int(str(value).strip())
    except ValueError as e:
        raise InvalidTerms(f"{what} must be a whole number, not {value!r}.") from e
    if abs(number) > 1_000_000:
        raise InvalidTerms(f"{what} must be a whole number up to 1,000,000, not {value!r}.")
    return number


def parse_date(value: object) -> dt.date:
    """A date from a form or the CLI (ISO text; empty: today)."""
    if value is None or value == "":
        return dt.date.today()
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value).strip())
    except ValueError as e:
        raise InvalidTerms(f"The start date must look like 2025-11-01, not {value!r}.") from e


def parse_terms(data: TermsInput) -> Terms:
    """Turn typed-in terms into ``Terms``; the reset day defaults to the start's day (or weekday)."""
    start = parse_date(data.start)
    period = (data.period or "monthly").strip().lower()
    reset_day = _int(data.reset_day, "The reset day")
    if reset_day is None:
        reset_day = start.isoweekday() if period == "weekly" else start.day
    rollover = (data.rollover or "none").strip().lower()
    cap = data.rollover_cap if data.rollover_cap not in (None, "") else None
    if cap is not None and rollover == "none":
        rollover = "cap"
    rate = None
    if data.overage_rate not in (None, ""):
        try:
            rate = Decimal(str(data.overage_rate).strip())
        except InvalidOperation as e:
            raise InvalidTerms(f"The overage rate must be a number, not {data.overage_rate!r}.") from e
        if not rate.is_finite() or abs(rate) > MAX_RATE:
            raise InvalidTerms(f"The overage rate must be a number up to {MAX_RATE:,}, not {data.overage_rate!r}.")
    money = _money_terms(data)
    if money and rate is not None:
        rate = parse_amount(data.overage_rate, money["currency"], "overage rate")
    return Terms(
        **money,
        allotment_s=hours_to_seconds(data.hours, "hours per period"), start=start,
        period=choice(PeriodKind, period, "period"), reset_day=reset_day,
        timezone=(data.timezone or "UTC").strip(), rollover=choice(Rollover, rollover, "rollover"),
        rollover_cap_s=hours_to_seconds(cap, "the rollover cap") if cap is not None else None,
        rollover_expiry_periods=_int(data.rollover_expiry_periods, "Expiry"),
        overage=choice(Overage, (data.overage or "carry").strip().lower(), "overage handling"), overage_rate=rate,
        rounding=Rounding(_int(data.rounding, "Rounding") or 0,
                          choice(RoundingMode, (data.rounding_mode or "up").strip().lower(), "rounding mode"),
                          _int(data.minimum, "The minimum") or 0))


def _money_terms(data: TermsInput) -> dict:
    """Fee, currency and hourly rate as typed; amounts in the currency's minor unit."""
    if all(v in (None, "") for v in (data.fee, data.currency, data.hourly_rate)):
        return {}
    if data.currency in (None, ""):
        raise InvalidTerms("A fee or an hourly rate needs its currency (an ISO 4217 code such as EUR).")
    currency = check_currency(data.currency)
    return {"currency": currency, "fee": parse_amount(data.fee, currency, "fee"),
            "hourly_rate": parse_amount(data.hourly_rate, currency, "hourly rate")}


def _apply_structure(retainer: Retainer, terms: Terms) -> None:
    retainer.start_date = terms.start
    retainer.period = terms.period.value
    retainer.reset_day = terms.reset_day
    retainer.timezone = terms.timezone


def _apply_terms(retainer: Retainer, terms: Terms) -> None:
    retainer.allotment_s = terms.allotment_s
    retainer.start_date = terms.start
    retainer.period = terms.period.value
    retainer.reset_day = terms.reset_day
    retainer.timezone = terms.timezone
    retainer.rollover = terms.rollover.value
    retainer.rollover_cap_s = terms.rollover_cap_s
    retainer.rollover_expiry_periods = terms.rollover_expiry_periods
    retainer.overage = terms.overage.value
    retainer.overage_rate = terms.overage_rate
    retainer.rounding_min = terms.rounding.increment_min
    retainer.rounding_mode = terms.rounding.mode.value
    retainer.minimum_min = terms.rounding.minimum_min
    retainer.fee, retainer.currency, retainer.hourly_rate = terms.fee, terms.currency, terms.hourly_rate


def _clean_name(value: str, what: str) -> str:
    value = " ".join(xml_safe(value).split())
    if not value:
        raise InvalidInput(f"Give the retainer a {what}.")
    if len(value) > 200:
        raise InvalidInput(f"The {what} is too long (200 characters at most).")
    return value


def active_count(session: Session, account_id: int) -> int:
    return session.scalar(select(func.count(Retainer.id)).where(
        Retainer.account_id == account_id, Retainer.active.is_(True))) or 0


def plan_full(session: Session, account: Account) -> str:
    """Why one more active retainer would be refused, or "" while the plan has room (pages say it first)."""
    limit = plans.retainer_limit(account)
    if active_count(session, account.id) < limit:
        return ""
    plural = "retainer" if limit == 1 else "retainers"
    return (f"The {account.plan} plan keeps {limit} active {plural}, and this account has {limit}. "
            "Archive one first, or upgrade to the pro plan (up to 10 active retainers) on the Plan page.")


def _check_plan(session: Session, account: Account) -> None:
    """Refuse one more active retainer beyond the plan; the account stays locked until commit."""
    lock_account(session, account.id)
    reason = plan_full(session, account)
    if reason:
        raise PlanLimitReached(reason)


def create_retainer(session: Session, account: Account, name: str, client: str, terms: Terms,
                    rules: MatchRules | None = None, language: str = DEFAULT_LANGUAGE) -> Retainer:
    """Create an active retainer with a fresh public token, refused beyond the plan's limit."""
    _check_plan(session, account)
    client = _clean_name(client, "client")
    retainer = Retainer(account_id=account.id, name=_clean_name(name, "name"), client=client,
                        language=check_language(language),
                        match_rules=(rules or MatchRules(clients=(client,))).to_json(),
                        public_token=new_token(), active=True, revision=1)
    _apply_terms(retainer, terms)
    session.add(retainer)
    session.flush()
    add_version(session, retainer, terms, terms.start, created_at=retainer.created_at)
    keep_rules(session, account.id, retainer.id, [terms.rounding])
    # A newer retainer takes only what no older one's rules match, except entries sent to another
    # by default (no client, no project) that its rules do match: that revises the other's periods.
    with watch_closed_periods(session, account.id, "rules"):
        route_entries(session, account.id)
    return retainer


def get_retainer(session: Session, account: Account, retainer_id: int) -> Retainer:
    return get_owned(session, Retainer, account.id, retainer_id)


def list_retainers(session: Session, account: Account) -> list[Retainer]:
    return list(session.scalars(select_owned(Retainer, account.id).order_by(Retainer.active.desc(),
                                                                             Retainer.id)))


def update_retainer(session: Session, account: Account, retainer_id: int, *, name: str | None = None,
                    client: str | None = None, terms: Terms | None = None,
                    rules: MatchRules | None = None, effective_from: dt.date | None = None,
                    now: dt.datetime | None = None, language: str | None = None) -> Retainer:
    """Change names, language, terms or match rules; new rules route the account's entries again.

    New figures (hours, rollover, overage, rounding) apply from the period containing
    ``effective_from`` (default: the current one) onward; the period structure (kind, reset day,
    start, time zone) is the retainer's and applies to its whole history, so the closed periods it
    changes are recorded as revised, as are those new rules change.
    """
    retainer = get_retainer(session, account, retainer_id)
    if name is not None:
        retainer.name = _clean_name(name, "name")
    if client is not None:
        retainer.client = _clean_name(client, "client")
    if language is not None:
        retainer.language = check_language(language)
    new_rules = moves_entries(retainer, rules)
    moves = terms is not None and _moves_figures(retainer, terms)
    with watch_closed_periods(session, account.id, "rules" if new_rules else "terms", now=now,
                              terms_of=[retainer.id] if terms is not None else (),
                              only=None if new_rules else [retainer.id] if moves else []):
        if terms is not None:
            today = local_date(now or dt.datetime.now(dt.UTC), terms.tz)
            rezoned = terms.timezone != retainer.timezone
            _apply_structure(retainer, terms)
            if rezoned:
                session.flush()
                rezone(session, retainer.id)
                rebuild(session, account.id, retainer.id)
            schedule_change(session, retainer, terms, effective_from, today)
            session.flush()
            schedule = terms_schedule(session, retainer)
            _apply_terms(retainer, schedule[-1][1])
            keep_rules(session, account.id, retainer.id, [t.rounding for _, t in schedule])
        if rules is not None and new_rules:
            retainer.match_rules = rules.to_json()
        bump_page_version(retainer)
        session.flush()
        if new_rules:  # where entries go is the rules' alone: new terms move none
            route_entries(session, account.id)
    return retainer


def moves_entries(retainer: Retainer, rules: MatchRules | None) -> bool:
    """Can an edit with these rules send entries elsewhere? Only new rules route: names, language and
    terms move no entry, so ``changes.apply`` need not read the account's entries to find moves."""
    return rules is not None and rules.to_json() != retainer.match_rules


def _moves_figures(retainer: Retainer, terms: Terms) -> bool:
    """Can these terms move a closed period's figures (used seconds, entries)? Only through the
    period structure, which applies to the whole history: new hours, rollover, overage, rounding
    and money apply from the current period on (``schedule_change`` refuses a closed one), so such
    an edit has no closed period to read before and after."""
    structure = (terms.start, terms.period.value, terms.reset_day, terms.timezone)
    return structure != (retainer.start_date, retainer.period, retainer.reset_day, retainer.timezone)


def _rematch(session: Session, account: Account, retainer: Retainer, now: dt.datetime | None = None) -> None:
    """After a change to what a retainer matches or holds: a new revision, then every entry routed
    again, released ones included; closed periods this changes are recorded as revised."""
    bump_page_version(retainer)
    session.flush()
    with watch_closed_periods(session, account.id, "rules", now=now):
        route_entries(session, account.id)


def set_active(session: Session, account: Account, retainer_id: int, active: bool) -> Retainer:
    retainer = get_retainer(session, account, retainer_id)
    if active and not retainer.active:
        _check_plan(session, account)
    retainer.active = active
    _rematch(session, account, retainer)
    return retainer


def rotate_token(session: Session, account: Account, retainer_id: int) -> Retainer:
    """A new unguessable token; the old URL stops working as soon as this commits."""
    retainer = get_retainer(session, account, retainer_id)
    retainer.public_token, retainer.disabled_token = new_token(), None
    bump_page_version(retainer)
    return retainer


def disable_token(session: Session, account: Account, retainer_id: int) -> Retainer:
    """Take the page offline; the link is kept aside so ``enable_token`` can bring it back."""
    retainer = get_retainer(session, account, retainer_id)
    if retainer.public_token is not None:
        retainer.disabled_token, retainer.public_token = retainer.public_token, None
        bump_page_version(retainer)
    return retainer


def enable_token(session: Session, account: Account, retainer_id: int) -> Retainer:
    """Undo ``disable_token``: the very link the client bookmarked works again."""
    retainer = get_retainer(session, account, retainer_id)
    if retainer.public_token is None:
        if retainer.disabled_token is None:
            raise InvalidInput("There is no disabled link to bring back; make a new link instead.")
        retainer.public_token, retainer.disabled_token = retainer.disabled_token, None
        bump_page_version(retainer)
    return retainer


def by_token(session: Session, token: str) -> Retainer:
    """The retainer behind a public token; unknown and revoked tokens raise the same ``NotFound``."""
    retainer = None
    if plausible_token(token):
        retainer = session.scalars(select(Retainer).where(Retainer.public_token == token)).first()
    if retainer is None:
        raise NotFound("There is nothing at this address.")
    return retainer


# --- matching entries -------------------------------------------------------------------------

def match_entries(session: Session, account_id: int) -> dict[int, int]:
    """Route every entry of the account by the rules again; ``{retainer_id: entries gained}``.

    For entries written without the importer (tests, the demo); closed periods it changes are
    recorded as revised, as for any rule change.
    """
    with watch_closed_periods(session, account_id, "rules"):
        return route_entries(session, account_id).gained


def unmatched_entries(session: Session, account: Account, limit: int = 200) -> tuple[int, list[TimeEntry]]:
    """Entries of the account that count against no retainer (removed ones excluded)."""
    cond = (TimeEntry.account_id == account.id, TimeEntry.status != "removed",
            ~exists().where(retainer_entries.c.entry_id == TimeEntry.id))
    total = session.scalar(select(func.count(TimeEntry.id)).where(*cond)) or 0
    rows = session.scalars(select(TimeEntry).where(*cond)
                           .order_by(TimeEntry.local_date.desc(), TimeEntry.id.desc()).limit(limit))
    return total, list(rows)
