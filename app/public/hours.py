"""The client's public hours page ``/h/<token>`` and its exports (.json, .csv, .ics, statement PDF, Atom).

Hot path: one indexed read of the retainer's id, revision and time zone by token; the rendered
bytes are cached on the app under that revision and the client's local date, and served with a
strong ``ETag`` and ``Last-Modified`` so a bookmarked page revalidates with ``304 Not Modified``.
The domain services bump a retainer's revision in the same transaction as every change its client
should see (an import, a top-up, a publish), so every worker notices on its next request and other
accounts' pages keep their cache; rotating or disabling the token makes the lookup itself fail, so
the old URL 404s at once. A GET here never writes, except the miss counter below.

Unknown, malformed and revoked tokens all get the same 404; misses are rate-limited per client
address (hits never are: a client behind a shared address must not be locked out by a scanner).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple
from zoneinfo import ZoneInfo

from flask import Response, abort, current_app, render_template, request
from flask.typing import ResponseReturnValue
from sqlalchemy import bindparam, select

from app.db import engine, get_db
from app.extensions import page_cache
from app.public import bp, statement_guard
from app.public.links import public_base
from hourtab.alerts import service as alerts
from hourtab.core import ratelimit
from hourtab.core.db import transaction, utcnow
from hourtab.core.errors import NotFound
from hourtab.core.i18n import writer
from hourtab.retainers import ledger_reads, service
from hourtab.retainers.calendar import retainer_calendar
from hourtab.retainers.currency import format_money
from hourtab.retainers.exports import entries_csv, report_json
from hourtab.retainers.feed import feed_id, feed_items
from hourtab.retainers.hours_report import HoursReport
from hourtab.retainers.models import Retainer
from hourtab.retainers.presentation import format_clock
from hourtab.retainers.totals import Pick, all_periods, no_periods
from hourtab.statements import month_periods, month_status, parse_month, statement_pdf
from incidents.writeups.published import published_log_lines

MISS_BUCKET = "public-hours-miss"
MISS_WINDOW_S = 60
DEFAULT_MISS_LIMIT = 30

#: Stricter than the app default: the page needs no script, no fetch, no form, no frame.
PUBLIC_CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
              "form-action 'self'; frame-ancestors 'none'")


class Stamp(NamedTuple):
    """The one row a public page is keyed on: an edit bumps ``revision``, the zone fixes "today"."""

    retainer_id: int
    revision: int
    timezone: str


@dataclass(frozen=True)
class Rendered:
    body: bytes
    mimetype: str
    headers: tuple[tuple[str, str], ...] = ()
    etag: str = ""
    rendered_at: dt.datetime | None = None


#: Built once, so SQLAlchemy reuses its compiled form; run as Core on a pooled connection, without
#: the ORM session's per-request work, which was most of the time of a cached hit.
_STAMP = (select(Retainer.id, Retainer.revision, Retainer.timezone)
          .where(Retainer.public_token == bindparam("token")))


def _read_stamp(token: str) -> Stamp | None:
    if not service.plausible_token(token):
        return None
    with engine().connect() as connection:
        row = connection.execute(_STAMP, {"token": token}).first()
    return Stamp(*row) if row is not None else None


def _miss() -> NotFound:
    """Count a miss for this address (429 past the limit) and return the one 404 for every miss."""
    db = get_db()
    limit = int(current_app.config.get("PUBLIC_MISS_LIMIT", DEFAULT_MISS_LIMIT))
    keys = [f"ip:{request.remote_addr}"]
    with transaction(db):
        ratelimit.check(db, MISS_BUCKET, keys, limit, MISS_WINDOW_S)
        ratelimit.record(db, MISS_BUCKET, keys, MISS_WINDOW_S)
    return NotFound("There is nothing at this address.")


def _stamp_or_404(token: str) -> Stamp:
    stamp = _read_stamp(token)
    if stamp is None:
        raise _miss()
    return stamp


def now() -> dt.datetime:
    """The clock the pages use; tests and demos may set ``HOURS_CLOCK`` to a fixed-time callable."""
    clock = current_app.config.get("HOURS_CLOCK")
    return clock() if clock else dt.datetime.now(dt.UTC)


def _etag(stamp: Stamp, body: bytes) -> str:
    """A strong validator over the bytes and the revision they were rendered from, so a change the
    client should see always changes it, and a change elsewhere never does."""
    return hashlib.sha256(f"{stamp.retainer_id}:{stamp.revision}:".encode() + body).hexdigest()[:32]


def _serve(token: str, fmt: str, render: Callable[[Stamp], Rendered]) -> Response:
    stamp = _stamp_or_404(token)
    today = now().astimezone(ZoneInfo(stamp.timezone)).date()
    key = (fmt, token, stamp.retainer_id, stamp.revision, today)
    cache = page_cache()
    rendered = cache.get(key)
    if rendered is None:
        fresh = render(stamp)
        rendered = Rendered(fresh.body, fresh.mimetype, fresh.headers, _etag(stamp, fresh.body),
                            utcnow().replace(microsecond=0))
        cache.put(key, rendered)
    response = Response(rendered.body, mimetype=rendered.mimetype, headers=list(rendered.headers))
    response.set_etag(rendered.etag)
    response.last_modified = rendered.rendered_at
    response.make_conditional(request)     # answers 304 in place when the client's copy is current
    return response


def _retainer(stamp: Stamp) -> Retainer:
    """The stamped retainer; one deleted since its stamp was read is not found."""
    retainer = get_db().get(Retainer, stamp.retainer_id)
    if retainer is None:
        abort(404)
    return retainer


def _report(stamp: Stamp, entries: Pick = no_periods) -> HoursReport:
    """The report behind every format; only the CSV and statements list older periods' entries."""
    return ledger_reads.hours_report(get_db(), _retainer(stamp), now(), entries=entries)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "hours"


def _page_context(report: HoursReport, token: str) -> dict:
    past = [p for p in reversed(report.ledger.periods) if not p.is_open]
    tz = report.info.terms.tz
    # Hours in the consultant's unit come from the report (``r.fmt``); a session's own length is a clock.
    money_of = dict(zip((p.period.start for p in report.ledger.periods), report.money, strict=False))
    # The client's language: its messages, and its dates and money as its locale writes them.
    w = writer(report.info.language)
    return {"r": report, "cur": report.current, "past": past, "base": f"/h/{token}", "hm": format_clock,
            "money_of": money_of, "priced": any(money_of.get(p.period.start) for p in past),
            "fmt_day": w.day, "fmt_time": lambda at: w.moment(at, tz), "cap": lambda s: s[:1].upper() + s[1:],
            "money": lambda amount, currency: format_money(amount, currency, w.language), "period_label": w.period,
            **w.template_context()}


def _incident_logs(stamp: Stamp) -> dict:
    """Published incidents' retainer log entries, by the day of their last session."""
    return published_log_lines(get_db(), stamp.retainer_id)


def _alerts_when(stamp: Stamp) -> str:
    """The alerts a subscriber would get, for the subscribe form ("" hides it: e-mail is off, or none are sent)."""
    if not current_app.config.get("SMTP_URL"):
        return ""

    db = get_db()
    retainer = _retainer(stamp)
    return alerts.alerts_when(alerts.settings_for(db, retainer).enabled, retainer.language)


@bp.route("/h/<token>")
def hours_page(token: str) -> ResponseReturnValue:
    def render(stamp: Stamp) -> Rendered:
        html = render_template("public/hours/page.html", **_page_context(_report(stamp), token),
                               incident_logs=_incident_logs(stamp),
                               alerts_when=_alerts_when(stamp))
        return Rendered(html.encode("utf-8"), "text/html")

    return _serve(token, "html", render)


@bp.route("/h/<token>.json")
def hours_json(token: str) -> ResponseReturnValue:
    def render(stamp: Stamp) -> Rendered:
        body = json.dumps(report_json(_report(stamp)), ensure_ascii=False, indent=2)
        return Rendered(body.encode("utf-8"), "application/json")

    return _serve(token, "json", render)


@bp.route("/h/<token>.csv")
def hours_csv(token: str) -> ResponseReturnValue:
    def render(stamp: Stamp) -> Rendered:
        report = _report(stamp, all_periods)
        name = f"hours-{_slug(report.info.name)}.csv"
        return Rendered(("\ufeff" + entries_csv(report.ledger)).encode("utf-8"), "text/csv",
                        (("Content-Disposition", f'attachment; filename="{name}"'),))

    return _serve(token, "csv", render)


@bp.route("/h/<token>/statement/<month>.pdf")
def hours_statement(token: str, month: str) -> ResponseReturnValue:
    parse_month(month)
    stamp = _stamp_or_404(token)
    today = now().astimezone(ZoneInfo(stamp.timezone)).date()
    status = month_status(get_db(), _retainer(stamp), month, today)
    if status is None:
        raise _miss()

    def render(stamp: Stamp) -> Rendered:
        statement_guard.charge_render(f"retainer:{stamp.retainer_id}")
        report = _report(stamp, month_periods(month))
        try:
            pdf = statement_pdf(report.info, report.ledger, month, report.as_of, report.revisions)
        except NotFound:  # month_status errs on the side of rendering at the ledger's edge
            raise _miss() from None
        name = f"statement-{_slug(report.info.name)}-{month}.pdf"
        return Rendered(pdf, "application/pdf", (("Content-Disposition", f'inline; filename="{name}"'),))

    if status == "closed":
        key = (token, stamp.retainer_id, stamp.revision, month)
        rendered = statement_guard.closed_statement(key, lambda: render(stamp))
        return Response(rendered.body, mimetype=rendered.mimetype, headers=list(rendered.headers))
    return _serve(token, f"pdf:{month}", render)


@bp.route("/h/<token>.ics")
def hours_calendar(token: str) -> ResponseReturnValue:
    """The period resets and statement dates, for a calendar app to subscribe to."""
    base = public_base()

    def render(stamp: Stamp) -> Rendered:
        db = get_db()
        retainer = _retainer(stamp)
        today = now().astimezone(ZoneInfo(stamp.timezone)).date()
        body = retainer_calendar(db, retainer, today, f"{base}/h/{token}")
        name = f"hours-{_slug(retainer.name)}.ics"
        return Rendered(body.encode("utf-8"), "text/calendar",
                        (("Content-Disposition", f'inline; filename="{name}"'),))

    # The events link to the page, so the bytes differ by base URL, as the feed's do.
    return _serve(token, f"ics:{base}", render)


def _atom_time(at: dt.datetime) -> str:
    return at.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@bp.route("/h/<token>/feed.atom")
def hours_feed(token: str) -> ResponseReturnValue:
    base = public_base()

    def render(stamp: Stamp) -> Rendered:
        report = _report(stamp)
        db = get_db()
        page_url = f"{base}/h/{token}"
        items = [{"title": i.title, "id": i.id, "updated": _atom_time(i.updated), "link": page_url + i.link,
                  "summary": i.summary} for i in feed_items(db, _retainer(stamp), report)]
        updated = items[0]["updated"] if items else _atom_time(report.as_of)
        xml = render_template("public/hours/feed.xml", r=report, items=items, page_url=page_url,
                              feed_id=feed_id(stamp.retainer_id), updated=updated,
                              **writer(report.info.language).template_context())
        return Rendered(xml.encode("utf-8"), "application/atom+xml")

    # Links differ by base URL when it comes from the request, so the cached bytes do too.
    return _serve(token, f"atom:{base}", render)


@bp.after_request
def _public_headers(response: Response) -> Response:
    """No referrer leaves a client's page (it carries the token), and no search engine keeps it."""
    if request.path.startswith(("/h/", "/alerts/")):   # both carry a secret in the path
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["X-Robots-Tag"] = "noindex, nofollow"
        response.headers["Content-Security-Policy"] = PUBLIC_CSP
        cacheable = response.status_code in (200, 304) and request.path.startswith("/h/")
        response.headers["Cache-Control"] = "private, max-age=60" if cacheable else "no-store"
    return response
