"""A retainer's calendar (iCalendar, RFC 5545): its period resets and statement dates as events.

A client subscribes to ``/h/<token>.ics`` once and their calendar app shows when the hours start
again and when each month's statement is final. Every event is an all-day event on a local date in
the retainer's time zone, because that is what a reset is (``periods``: boundaries are dates, a
reset happens at local midnight wherever the client is); the zone is named in the text and in
``X-WR-TIMEZONE``.

Calendar apps update an event whose ``UID`` they already hold instead of adding a second one, so a
UID is derived from the retainer's id and what the event is (the reset of the period starting on a
day, the statement of a month): the same on every download, under a rotated link too. The window
is bounded (``PERIODS_BEHIND`` and ``PERIODS_AHEAD`` around today's period), so a weekly retainer
of ten years is still a short file.

Every word a client reads is in ``TEXT`` (and the month names of ``presentation``), so the
calendar can be written in the retainer's own language by handing another mapping to ``write_ics``.
"""

from __future__ import annotations

import datetime as dt
import enum
import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from hourtab.core.accounts import Account
from hourtab.retainers.ledger import terms_for
from hourtab.retainers.models import Retainer
from hourtab.retainers.periods import Period, index_of, next_reset, periods_through
from hourtab.retainers.presentation import MONTHS, hours_formatter
from hourtab.retainers.terms import Rollover, Terms
from hourtab.retainers.versions import terms_schedule

#: Closed periods shown before today's, and periods shown after it (an archived retainer: none).
PERIODS_BEHIND = 12
PERIODS_AHEAD = 12
#: How often a subscribed calendar app is asked to fetch the file again (RFC 7986 REFRESH-INTERVAL).
REFRESH = "PT12H"
PRODID = "-//HourTab//Retainer calendar//EN"

#: The words of the calendar, in one place; ``{…}`` fields are filled by ``write_ics``.
TEXT: Mapping[str, str] = {
    "calendar_name": "{name} · hours",
    "calendar_description": "Period resets and statements of {name} ({client}), from {consultant}. "
                            "Dates are in {zone}.",
    "start_summary": "{name}: retainer starts ({hours} h)",
    "reset_summary": "{name}: hours reset ({hours} h)",
    "start_description": "The first period, {label}, starts at midnight ({zone}) with {hours} h.",
    "reset_description": "The period {label} starts at midnight ({zone}) with {hours} h. {rollover}",
    "rollover_none": "Hours left unused at the reset lapse.",
    "rollover_cap": "Hours left unused at the reset roll over, up to {cap} h.",
    "rollover_all": "Hours left unused at the reset roll over.",
    "statement_summary": "{name}: statement for {month}",
    "statement_description": "The statement for {month} covers the periods that start in {month}; "
                             "it is final from this day: {url}",
    "page_line": "Hours page: {url}",
}


class EventKind(enum.StrEnum):
    START = "start"  # the first period of the retainer
    RESET = "reset"  # every later period
    STATEMENT = "statement"  # the day a month's statement becomes final


@dataclass(frozen=True)
class CalendarEvent:
    """One all-day event on ``day`` (a local date in the retainer's zone)."""

    kind: EventKind
    day: dt.date
    uid: str
    #: The period that starts (START, RESET) or the last one the statement covers (STATEMENT).
    period: Period
    #: What the starting period grants (START, RESET); the statement's month ``YYYY-MM`` (STATEMENT).
    allotment_s: int = 0
    month: str = ""
    #: How the period that ends at a reset closes (RESET).
    closing: Terms | None = None


def event_uid(retainer_id: int, kind: EventKind, key: str) -> str:
    digest = hashlib.sha256(f"{retainer_id}:{kind.value}:{key}".encode()).hexdigest()[:32]
    return f"{digest}@hourtab"


def _window(terms: Terms, today: dt.date, behind: int, ahead: int) -> tuple[list[Period], list[Period]]:
    """(the periods shown, every period from the start through one past the last statement shown)."""
    periods = periods_through(terms, today)
    current = max(index_of(periods, today), 0)  # before the start: the first period is "today's"

    def extend_to(count: int) -> None:
        while len(periods) < count:
            start = periods[-1].end
            periods.append(Period(len(periods), start, next_reset(terms, start)))

    extend_to(current + ahead + 1)
    shown = periods[max(0, current - behind):current + ahead + 1]
    # A statement covers every period starting in its month; see past the month of the last one shown.
    last_month = shown[-1].month_key
    while periods[-1].month_key <= last_month:
        extend_to(len(periods) + 1)
    return shown, periods


def calendar_events(retainer_id: int, terms: Terms, schedule: Sequence[tuple[dt.date, Terms]],
                    today: dt.date, active: bool = True, behind: int = PERIODS_BEHIND,
                    ahead: int = PERIODS_AHEAD) -> list[CalendarEvent]:
    """The resets of the periods around ``today`` and the statement dates of their months, by day."""
    schedule = schedule or [(terms.start, terms)]
    shown, periods = _window(terms, today, behind, ahead if active else 0)
    events = []
    for p in shown:
        kind = EventKind.START if p.index == 0 else EventKind.RESET
        closing = terms_for(schedule, periods[p.index - 1].start) if p.index else None
        events.append(CalendarEvent(kind, p.start, event_uid(retainer_id, kind, p.start.isoformat()), p,
                                    allotment_s=terms_for(schedule, p.start).allotment_s, closing=closing))
    for month in dict.fromkeys(p.month_key for p in shown):
        last = [p for p in periods if p.month_key == month][-1]
        events.append(CalendarEvent(EventKind.STATEMENT, last.end,
                                    event_uid(retainer_id, EventKind.STATEMENT, month), last, month=month))
    return sorted(events, key=lambda e: (e.day, e.kind != EventKind.STATEMENT))


def month_label(month: str) -> str:
    """``2026-03`` → ``Mar 2026``."""
    year, mon = month.split("-")
    return f"{MONTHS[int(mon) - 1]} {year}"


@dataclass(frozen=True)
class CalendarHeader:
    """What the calendar says about itself; ``stamp`` is the last change (every event's DTSTAMP)."""

    name: str
    client: str
    consultant: str
    timezone: str
    page_url: str
    stamp: dt.datetime
    hours_unit: str = "decimal"


def _escape(text: str) -> str:
    """RFC 5545 TEXT: backslash, semicolon, comma and line breaks escaped."""
    return (text.replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,")
            .replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n"))


def _fold(line: str) -> Iterator[str]:
    """Content lines of at most 75 octets, continued with a leading space, never inside a character."""
    limit, chunk = 75, ""
    for char in line:
        if len((chunk + char).encode("utf-8")) > limit:
            yield chunk
            chunk, limit = " ", 75
        chunk += char
    yield chunk


def _date(day: dt.date) -> str:
    return day.strftime("%Y%m%d")


def _describe(event: CalendarEvent, header: CalendarHeader, text: Mapping[str, str],
              hours: Callable[[int], str]) -> tuple[str, str]:
    fields = {"name": header.name, "zone": header.timezone, "label": event.period.label,
              "hours": hours(event.allotment_s)}
    if event.kind is EventKind.STATEMENT:
        month = month_label(event.month)
        url = f"{header.page_url}/statement/{event.month}.pdf"
        return (text["statement_summary"].format(name=header.name, month=month),
                text["statement_description"].format(month=month, url=url))
    if event.kind is EventKind.START:
        return text["start_summary"].format(**fields), text["start_description"].format(**fields)
    closing = event.closing
    rollover = {Rollover.NONE: "rollover_none", Rollover.CAP: "rollover_cap", Rollover.ALL: "rollover_all"}
    carry = text[rollover[closing.rollover]].format(cap=hours(closing.rollover_cap_s or 0)) if closing else ""
    return (text["reset_summary"].format(**fields),
            text["reset_description"].format(**fields, rollover=carry).strip())


def write_ics(events: Sequence[CalendarEvent], header: CalendarHeader,
              text: Mapping[str, str] = TEXT) -> str:
    """The calendar as an iCalendar document (CRLF line ends, folded lines)."""
    hours = hours_formatter(header.hours_unit)
    stamp = header.stamp.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    about = {"name": header.name, "client": header.client, "consultant": header.consultant,
             "zone": header.timezone}
    lines = ["BEGIN:VCALENDAR", "VERSION:2.0", f"PRODID:{PRODID}", "CALSCALE:GREGORIAN", "METHOD:PUBLISH",
             f"NAME:{_escape(text['calendar_name'].format(**about))}",
             f"X-WR-CALNAME:{_escape(text['calendar_name'].format(**about))}",
             f"DESCRIPTION:{_escape(text['calendar_description'].format(**about))}",
             f"X-WR-CALDESC:{_escape(text['calendar_description'].format(**about))}",
             f"X-WR-TIMEZONE:{header.timezone}", f"REFRESH-INTERVAL;VALUE=DURATION:{REFRESH}",
             f"X-PUBLISHED-TTL:{REFRESH}", f"URL:{header.page_url}"]
    for event in events:
        summary, description = _describe(event, header, text, hours)
        if event.kind is not EventKind.STATEMENT:
            description += "\n" + text["page_line"].format(url=header.page_url)
        url = (f"{header.page_url}/statement/{event.month}.pdf" if event.kind is EventKind.STATEMENT
               else header.page_url)
        lines += ["BEGIN:VEVENT", f"UID:{event.uid}", f"DTSTAMP:{stamp}",
                  f"DTSTART;VALUE=DATE:{_date(event.day)}",
                  f"DTEND;VALUE=DATE:{_date(event.day + dt.timedelta(days=1))}",
                  f"SUMMARY:{_escape(summary)}", f"DESCRIPTION:{_escape(description)}", f"URL:{url}",
                  "TRANSP:TRANSPARENT", "END:VEVENT"]
    lines.append("END:VCALENDAR")
    return "".join(folded + "\r\n" for line in lines for folded in _fold(line))


def retainer_calendar(session: Session, retainer: Retainer, today: dt.date, page_url: str) -> str:
    """The calendar a client subscribes to, as of ``today`` in the retainer's zone (reads only)."""
    terms = retainer.terms()
    account = session.get(Account, retainer.account_id)
    events = calendar_events(retainer.id, terms, terms_schedule(session, retainer), today, retainer.active)
    header = CalendarHeader(name=retainer.name, client=retainer.client,
                            consultant=account.name_or_email if account else "", timezone=terms.timezone,
                            page_url=page_url, stamp=retainer.updated_at,
                            hours_unit=account.hours_unit if account else "decimal")
    return write_ics(events, header)
