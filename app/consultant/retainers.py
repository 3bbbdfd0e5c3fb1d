"""/retainers…: list, create, edit terms and rules (previewed where they revise history), the ledger, credits, links."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from flask import abort, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_login import login_required
from flask_wtf import FlaskForm
from wtforms import DateField, SelectField, StringField
from wtforms.fields.choices import SelectChoice
from wtforms.validators import DataRequired, Length, Optional

from app.auth import account
from app.consultant import bp
from app.consultant.accounts import zone_choices
from app.consultant.changes import Applied, run_change
from app.consultant.rules import NamesField, rules_from
from app.consultant.rules import fill as fill_rules
from app.db import get_db
from app.errors import form_status
from app.public.hours import now
from hourtab.core.db import transaction
from hourtab.core.errors import InvalidInput
from hourtab.core.i18n import DEFAULT_LANGUAGE, LANGUAGES
from hourtab.retainers import credits, ledger_reads, plans, service, versions
from hourtab.retainers.entry_names import entry_names
from hourtab.retainers.errors import PlanLimitReached
from hourtab.retainers.hours_report import entry_lines
from hourtab.retainers.inbox import inbox_totals
from hourtab.retainers.matching import MatchRules
from hourtab.retainers.presentation import format_hours, headline, hours_formatter
from hourtab.retainers.totals import latest_periods, no_periods

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from sqlalchemy.orm import Session

    from hourtab.core.accounts import Account
    from hourtab.retainers.changes import ChangePreview
    from hourtab.retainers.models import Retainer
    from hourtab.retainers.terms import Terms



def _choices(pairs: list[tuple[str, str]]) -> list[SelectChoice]:
    return [SelectChoice(value, label) for value, label in pairs]


#: The latest entries a retainer's page lists.
RECENT = 200
PERIODS = [("monthly", "Monthly"), ("weekly", "Weekly"), ("quarterly", "Quarterly")]
ROLLOVERS = [("none", "None: unused hours lapse"), ("cap", "Carry unused hours up to a cap"),
             ("all", "Carry all unused hours")]
OVERAGES = [("carry", "Carry as a negative balance"), ("bill", "Bill at the overage rate and reset")]
ROUNDINGS = [("0", "None"), ("6", "6 minutes"), ("15", "15 minutes"), ("30", "30 minutes")]
MODES = [("up", "Up"), ("nearest", "Nearest")]
BILLABLE = [("", "Any"), ("yes", "Billable only"), ("no", "Non-billable only")]


class RetainerForm(FlaskForm):
    name = StringField("Name", validators=[DataRequired(), Length(max=200)])
    client = StringField("Client", validators=[DataRequired(), Length(max=200)])
    language = SelectField("Language of the client's page, statement, invoice and e-mails",
                           choices=_choices(list(LANGUAGES.items())), default=DEFAULT_LANGUAGE)
    hours = StringField("Hours per period", validators=[DataRequired(), Length(max=20)])
    period = SelectField("Period", choices=_choices(PERIODS), default="monthly")
    reset_day = StringField("Reset day (day of month, or 1–7 = Mon–Sun for weekly; empty = start's day)",
                            validators=[Optional(), Length(max=2)])
    start = DateField("Start date", validators=[Optional()])
    # Any zone the domain accepts is refused there with a message, so the choice list is not enforced here.
    timezone = SelectField("Time zone", default="UTC", validate_choice=False,
                           validators=[DataRequired(), Length(max=64)])
    rollover = SelectField("Rollover", choices=_choices(ROLLOVERS), default="none")
    rollover_cap = StringField("Rollover cap (hours)", validators=[Optional(), Length(max=20)])
    rollover_expiry = StringField("Rolled hours expire after N periods (empty = never)",
                                  validators=[Optional(), Length(max=3)])
    overage = SelectField("Overage", choices=_choices(OVERAGES), default="carry")
    overage_rate = StringField("Overage rate per hour", validators=[Optional(), Length(max=20)])
    fee = StringField("Fee per period", validators=[Optional(), Length(max=20)])
    hourly_rate = StringField("Hourly rate (empty = the fee divided by the hours)",
                              validators=[Optional(), Length(max=20)])
    currency = StringField("Currency (ISO code, such as EUR)", validators=[Optional(), Length(max=3)])
    rounding = SelectField("Round each entry to", choices=_choices(ROUNDINGS), default="0")
    rounding_mode = SelectField("Rounding direction", choices=_choices(MODES), default="up")
    minimum = StringField("Minimum per entry (minutes)", default="0", validators=[Optional(), Length(max=3)])
    match_client = NamesField("Clients")
    match_project = NamesField("Projects")
    match_tag = NamesField("Tags")
    match_billable = SelectField("Billable", choices=_choices(BILLABLE), default="")
    effective_from = SelectField("New hours, rollover, overage and rounding apply from", validate_choice=False)


class CreditForm(FlaskForm):
    kind = SelectField("Kind", choices=_choices([("topup", "Top-up (prepaid hours)"),
                                                        ("adjustment", "Adjustment")]))
    on = DateField("Date", validators=[DataRequired()])
    hours = StringField("Hours (adjustments may be negative)", validators=[DataRequired(), Length(max=20)])
    reason = StringField("Reason (the client sees it)", validators=[DataRequired(), Length(max=500)])
    amount = StringField("Price of a top-up (optional)", validators=[Optional(), Length(max=20)])
    currency = StringField("Its currency (empty = the retainer's)", validators=[Optional(), Length(max=3)])


class ActionForm(FlaskForm):
    """CSRF only, for the buttons."""


def _terms(form: RetainerForm) -> Terms:
    return service.parse_terms(service.TermsInput(
        hours=form.hours.data, start=form.start.data, period=form.period.data, reset_day=form.reset_day.data,
        timezone=form.timezone.data, rollover=form.rollover.data, rollover_cap=form.rollover_cap.data,
        rollover_expiry_periods=form.rollover_expiry.data, overage=form.overage.data,
        overage_rate=form.overage_rate.data, rounding=form.rounding.data, rounding_mode=form.rounding_mode.data,
        minimum=form.minimum.data, fee=form.fee.data, hourly_rate=form.hourly_rate.data,
        currency=form.currency.data))


def _now() -> dt.datetime:
    """The clock the client's pages use (tests and demos may fix it), so both sides agree."""
    return now()


def _effective(value: str | None) -> dt.date | None:
    try:
        return dt.date.fromisoformat(value) if value else None
    except ValueError as e:
        raise InvalidInput(f"effective_from: choose a period, not {value!r}.") from e


def _rules(form: RetainerForm) -> MatchRules:
    return rules_from(form.match_client.data, form.match_project.data, form.match_tag.data,
                      form.match_billable.data, form.client.data)


def _moved(preview: ChangePreview) -> str:
    """What a saved change did to entries and closed periods, for its flash message."""
    moved = [m for m in preview.moves if m.source != m.target]
    n = sum(m.entries for m in moved)
    text = f" {n} entr{'y' if n == 1 else 'ies'} now count{'s' if n == 1 else ''} elsewhere." if n else ""
    revised = len(preview.periods)
    return text + (f" {revised} closed period{'' if revised == 1 else 's'} revised." if revised else "")


def public_url(token: str | None) -> str | None:
    return url_for("public.hours_page", token=token, _external=True) if token else None


def balances(db: Session, retainers: Iterable[Retainer]) -> list[dict]:
    """Each retainer with its live figures, for the dashboard and the list."""
    rows = []
    unit = account().hours_unit
    for r in retainers:
        ledger = ledger_reads.retainer_ledger(db, r, _now(), entries=no_periods)
        rows.append({"retainer": r, "current": ledger.current, "headline": headline(ledger.current, unit),
                     "left": hours_formatter(unit)(ledger.current.closing_s), "url": public_url(r.public_token)})
    return rows


@bp.route("/retainers")
@login_required
def retainers_list() -> ResponseReturnValue:
    db = get_db()
    me = account()
    return render_template("consultant/retainers/list.html", rows=balances(db, service.list_retainers(db, me)),
                           account=me, retainer_limit=plans.retainer_limit(me),
                           plan_full=service.plan_full(db, me))


@bp.route("/retainers/new", methods=["GET", "POST"])
@login_required
def retainer_new() -> ResponseReturnValue:
    form = RetainerForm()
    error = None
    if request.method == "GET" and not form.start.data:
        form.start.data = dt.date.today()
        form.timezone.data = account().timezone or "UTC"
        form.rounding.data = str(account().rounding_min or 0)
        _for_inbox_group(form)
    form.timezone.choices = zone_choices(form.timezone.data)
    if form.validate_on_submit():
        try:
            outcome = run_change(lambda db, me: service.create_retainer(db, me, form.name.data, form.client.data,
                                                                        _terms(form), _rules(form),
                                                                        language=form.language.data),
                                 title="Create this retainer?", cancel=url_for("consultant.retainers_list"))
        except (PlanLimitReached, InvalidInput) as e:
            form.form_errors.append(str(e))
            error = e
        else:
            if not isinstance(outcome, Applied):
                return outcome
            flash("Retainer created. Share its public link with the client." + _moved(outcome.preview))
            return redirect(url_for("consultant.retainer_detail", retainer_id=outcome.result.id))
    refused = isinstance(error, PlanLimitReached)
    names = entry_names(get_db(), account().id)
    # Said before the form is filled in, not only after it is sent.
    plan_full = "" if refused else service.plan_full(get_db(), account())
    return render_template("consultant/retainers/form.html", form=form, title="New retainer", names=names,
                           plan_refused=refused, plan_full=plan_full), *form_status(error)


def _for_inbox_group(form: RetainerForm) -> None:
    """``?client=…&project=…`` (the inbox's "new retainer" link): the form made for that work."""
    client, project = (request.args.get(k, "").strip()[:200] for k in ("client", "project"))
    if client or project:
        form.name.data = form.client.data = client or project
        form.match_client.data = [client] if client else []
        form.match_project.data = [] if client else [project]


def _fill(form: RetainerForm, r: Retainer, terms: Terms) -> None:
    """The form as the retainer stands; ``terms``: the version in force now (not a later scheduled one)."""
    form.name.data, form.client.data, form.language.data = r.name, r.client, r.language
    form.hours.data = format_hours(terms.allotment_s)
    form.period.data, form.reset_day.data, form.start.data = terms.period.value, str(terms.reset_day), terms.start
    form.timezone.data, form.rollover.data = terms.timezone, terms.rollover.value
    form.rollover_cap.data = format_hours(terms.rollover_cap_s) if terms.rollover_cap_s is not None else ""
    form.rollover_expiry.data = str(terms.rollover_expiry_periods or "")
    form.overage.data = terms.overage.value
    form.overage_rate.data = str(terms.overage_rate) if terms.overage_rate is not None else ""
    form.fee.data = str(terms.fee) if terms.fee is not None else ""
    form.hourly_rate.data = str(terms.hourly_rate) if terms.hourly_rate is not None else ""
    form.currency.data = terms.currency or ""
    form.rounding.data = str(terms.rounding.increment_min)
    form.rounding_mode.data = terms.rounding.mode.value
    form.minimum.data = str(terms.rounding.minimum_min)
    fill_rules(form, r.rules())


@bp.route("/retainers/<int:retainer_id>/edit", methods=["GET", "POST"])
@login_required
def retainer_edit(retainer_id: int) -> ResponseReturnValue:
    db = get_db()
    retainer = service.get_retainer(db, account(), retainer_id)
    form = RetainerForm()
    choices = versions.change_periods(retainer, _now())
    scheduled = versions.scheduled_after(db, retainer, choices[0].start)
    replaces = {start: t for start, t in scheduled}
    form.effective_from.choices = _choices(
        [(p.start.isoformat(), f"{p.label}{' (current period)' if i == 0 else ''}"
          + (f" (replaces the change scheduled for it: {replaces[p.start].describe()})" if p.start in replaces else ""))
         for i, p in enumerate(choices)])
    error = None
    if request.method == "GET":
        _fill(form, retainer, versions.in_force(db, retainer, choices[0].start))
        form.effective_from.data = choices[0].start.isoformat()
    form.timezone.choices = zone_choices(form.timezone.data)
    if request.method == "POST" and form.validate_on_submit():
        try:
            outcome = run_change(lambda db, me: service.update_retainer(
                db, me, retainer_id, name=form.name.data, client=form.client.data, terms=_terms(form),
                rules=_rules(form), effective_from=_effective(form.effective_from.data), now=_now(),
                language=form.language.data),
                title=f"Save the changes to {retainer.name}?",
                cancel=url_for("consultant.retainer_edit", retainer_id=retainer_id),
                moves=service.moves_entries(retainer, _rules(form)))
        except InvalidInput as e:
            form.form_errors.append(str(e))
            error = e
        else:
            if not isinstance(outcome, Applied):
                return outcome
            flash("Terms saved; the public page shows them now." + _moved(outcome.preview))
            return redirect(url_for("consultant.retainer_detail", retainer_id=retainer_id))
    return render_template("consultant/retainers/form.html", form=form, title=f"Edit {retainer.name}",
                           retainer=retainer, scheduled=scheduled, names=entry_names(db, retainer.account_id)
                           ), *form_status(error)


@bp.route("/retainers/<int:retainer_id>")
@login_required
def retainer_detail(retainer_id: int) -> ResponseReturnValue:
    db = get_db()
    me = account()
    retainer = service.get_retainer(db, me, retainer_id)
    ledger = ledger_reads.retainer_ledger(db, retainer, _now(), entries=latest_periods(RECENT))
    recent = ledger.entries.tail(RECENT).iloc[::-1]
    unassigned = inbox_totals(db, me.id)
    credit_form = CreditForm()
    if not credit_form.on.data:
        credit_form.on.data = dt.date.today()
    return render_template(
        "consultant/retainers/detail.html", r=retainer, ledger=ledger,
        headline=headline(ledger.current, me.hours_unit), terms=ledger.terms, rules=retainer.rules(),
        h=hours_formatter(me.hours_unit), url=public_url(retainer.public_token),
        history=ledger.schedule,
        entries=entry_lines(ledger, recent) if len(recent) else [], entry_total=sum(p.entry_count for p in ledger.periods),
        before_start=ledger.before_count, unassigned=unassigned,
        credit_form=credit_form, action=ActionForm())


def _action(retainer_id: int, fn: Callable[[Session, Account, int], object], message: str) -> ResponseReturnValue:
    """A button's change; one that revises closed periods (archiving, reactivating) asks first."""
    if not ActionForm().validate_on_submit():
        abort(400)
    detail = url_for("consultant.retainer_detail", retainer_id=retainer_id)
    outcome = run_change(lambda db, me: fn(db, me, retainer_id), title="Apply this change?", cancel=detail)
    if not isinstance(outcome, Applied):
        return outcome
    flash(message + _moved(outcome.preview))
    return redirect(detail)


#: What each link action does, for its confirmation page: (title, explanation, button).
CONFIRM = {
    "rotate": ("Make a new public link?",
               "The current link stops working at once; the client needs the new one to see their hours.",
               "Make a new link"),
    "disable": ("Disable the public page?",
                "Whoever opens the link sees 'not found' until you re-enable it; re-enabling brings back the "
                "same link.", "Disable the page"),
}


def _confirm(retainer_id: int, action: str, fn: Callable[[Session, Account, int], object],
             message: str) -> ResponseReturnValue:
    """GET shows what the action will do and asks; only the confirming POST changes anything."""
    if request.method == "GET":
        retainer = service.get_retainer(get_db(), account(), retainer_id)
        title, text, button = CONFIRM[action]
        return render_template("consultant/retainers/confirm.html", r=retainer, title=title, text=text,
                               button=button, action=ActionForm())
    return _action(retainer_id, fn, message)


@bp.route("/retainers/<int:retainer_id>/token/rotate", methods=["GET", "POST"])
@login_required
def retainer_rotate(retainer_id: int) -> ResponseReturnValue:
    return _confirm(retainer_id, "rotate", service.rotate_token,
                    "New public link made; the old one no longer works.")


@bp.route("/retainers/<int:retainer_id>/token/disable", methods=["GET", "POST"])
@login_required
def retainer_disable(retainer_id: int) -> ResponseReturnValue:
    return _confirm(retainer_id, "disable", service.disable_token,
                    "Public page disabled; its link now shows 'not found'. Re-enable it to bring the same link back.")


@bp.route("/retainers/<int:retainer_id>/token/enable", methods=["POST"])
@login_required
def retainer_enable(retainer_id: int) -> ResponseReturnValue:
    return _action(retainer_id, service.enable_token, "Public page enabled again, at the same link as before.")


@bp.route("/retainers/<int:retainer_id>/archive", methods=["POST"])
@login_required
def retainer_archive(retainer_id: int) -> ResponseReturnValue:
    return _action(retainer_id, lambda db, me, rid: service.set_active(db, me, rid, False),
                   "Retainer archived: it no longer counts against your plan or takes new entries.")


@bp.route("/retainers/<int:retainer_id>/activate", methods=["POST"])
@login_required
def retainer_activate(retainer_id: int) -> ResponseReturnValue:
    return _action(retainer_id, lambda db, me, rid: service.set_active(db, me, rid, True),
                   "Retainer active again.")


@bp.route("/retainers/<int:retainer_id>/credits", methods=["POST"])
@login_required
def retainer_add_credit(retainer_id: int) -> ResponseReturnValue:
    form = CreditForm()
    db = get_db()
    if not form.validate_on_submit():
        raise InvalidInput("Give a date, the hours and a reason. " +
                           " ".join(e for errs in form.errors.values() for e in errs))
    with transaction(db):
        credits.add_credit(db, db.merge(account()), retainer_id, form.kind.data, form.on.data, form.hours.data,
                           form.reason.data, amount=form.amount.data, currency=form.currency.data)
    flash("Saved; the client sees it with its reason.")
    return redirect(url_for("consultant.retainer_detail", retainer_id=retainer_id))


@bp.route("/retainers/<int:retainer_id>/credits/<int:credit_id>/delete", methods=["POST"])
@login_required
def retainer_delete_credit(retainer_id: int, credit_id: int) -> ResponseReturnValue:
    return _action(retainer_id, lambda db, me, rid: credits.delete_credit(db, me, rid, credit_id), "Removed.")
