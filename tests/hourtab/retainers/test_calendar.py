"""The calendar's events (resets, statement dates) and its iCalendar text, read back by ``icalendar``."""

from __future__ import annotations

import datetime as dt

import icalendar

from hourtab.retainers.calendar import (
    PERIODS_AHEAD,
    PERIODS_BEHIND,
    CalendarHeader,
    EventKind,
    calendar_events,
    write_ics,
)
from hourtab.retainers.terms import Terms

H = 3600


def _terms(**changes) -> Terms:
    values = {"allotment_s": 20 * H, "start": dt.date(2024, 1, 15), "reset_day": 15, "timezone": "Europe/Berlin"}
    return Terms(**{**values, **changes})


def _header(name: str = "ML platform, phase 2; Berlin") -> CalendarHeader:
    return CalendarHeader(name=name, client="Zeiss AG", consultant="Ada Consultant", timezone="Europe/Berlin",
                          page_url="https://hours.example/h/TOKEN", stamp=dt.datetime(2025, 3, 2, 9, 30, tzinfo=dt.UTC))


def _parse(text: str) -> tuple[icalendar.Calendar, list]:
    calendar = icalendar.Calendar.from_ical(text)
    return calendar, list(calendar.walk("VEVENT"))


def test_monthly_resets_and_statements_around_today_within_the_bounds():
    terms = _terms()
    events = calendar_events(7, terms, [], dt.date(2026, 6, 20))
    resets = [e for e in events if e.kind is EventKind.RESET]
    # Today's period started on 15 Jun; twelve before it and twelve after it.
    assert resets[0].day == dt.date(2025, 6, 15) and resets[-1].day == dt.date(2027, 6, 15)
    assert len(resets) == PERIODS_BEHIND + 1 + PERIODS_AHEAD
    assert not [e for e in events if e.kind is EventKind.START]  # the start is long out of the window
    statements = {e.month: e.day for e in events if e.kind is EventKind.STATEMENT}
    # A period starting on the 15th is in its month's statement, final when that period closes.
    assert statements["2026-05"] == dt.date(2026, 6, 15)
    assert len(statements) == len(resets)
    assert [e.day for e in events] == sorted(e.day for e in events)


def test_a_weekly_statement_is_final_when_the_last_week_starting_in_its_month_closes():
    terms = _terms(period="weekly", reset_day=1, start=dt.date(2025, 1, 6))  # Mondays
    events = calendar_events(1, terms, [], dt.date(2025, 3, 12), ahead=4, behind=4)
    statements = {e.month: e.day for e in events if e.kind is EventKind.STATEMENT}
    # Weeks shown start 10 Feb … 7 Apr; March's last week starts Mon 31 Mar and closes Mon 7 Apr.
    assert statements == {"2025-02": dt.date(2025, 3, 3), "2025-03": dt.date(2025, 4, 7),
                          "2025-04": dt.date(2025, 5, 5)}


def test_the_first_period_is_a_start_event_and_a_new_version_grants_its_own_hours():
    terms = _terms()
    schedule = [(terms.start, terms), (dt.date(2024, 3, 15), _terms(allotment_s=30 * H, rollover="all"))]
    events = calendar_events(3, terms, schedule, dt.date(2024, 2, 1), ahead=2)
    starts = [(e.kind, e.day, e.allotment_s // H) for e in events if e.kind is not EventKind.STATEMENT]
    assert starts == [(EventKind.START, dt.date(2024, 1, 15), 20), (EventKind.RESET, dt.date(2024, 2, 15), 20),
                      (EventKind.RESET, dt.date(2024, 3, 15), 30)]
    _, vevents = _parse(write_ics(events, _header()))
    text = {str(v["DTSTART"].dt): str(v["DESCRIPTION"]) for v in vevents if "reset" in str(v["SUMMARY"])}
    # What happens at a reset is the closing period's rule: lapse under the first terms.
    assert "lapse" in text["2024-03-15"] and "30 h" in text["2024-03-15"]


def test_an_archived_retainer_announces_no_future_resets():
    events = calendar_events(3, _terms(), [], dt.date(2026, 6, 20), active=False)
    assert max(e.day for e in events if e.kind is EventKind.RESET) == dt.date(2026, 6, 15)


def test_uids_are_stable_and_distinct_and_the_window_moves_without_renaming_events():
    terms = _terms()
    today = calendar_events(7, terms, [], dt.date(2026, 6, 20))
    later = calendar_events(7, terms, [], dt.date(2026, 9, 20))
    other = calendar_events(8, terms, [], dt.date(2026, 6, 20))
    uids = {(e.kind, e.day): e.uid for e in today}
    assert len(set(uids.values())) == len(today)
    shared = [(e.kind, e.day) for e in later if (e.kind, e.day) in uids]
    assert len(shared) > 20
    assert all(uids[(e.kind, e.day)] == e.uid for e in later if (e.kind, e.day) in uids)
    assert not {e.uid for e in other} & set(uids.values())


def test_the_ics_is_valid_icalendar_with_all_day_events_in_the_retainers_zone():
    events = calendar_events(7, _terms(), [], dt.date(2026, 6, 20))
    text = write_ics(events, _header())
    assert all(line.endswith("\r") or not line for line in text.split("\n")[:-1])  # CRLF line ends
    assert all(len(line.encode()) <= 75 for line in text.split("\r\n"))
    calendar, vevents = _parse(text)
    assert calendar["VERSION"] == "2.0" and calendar["X-WR-TIMEZONE"] == "Europe/Berlin"
    # Commas and semicolons in a name are escaped, and read back intact.
    assert str(calendar["DESCRIPTION"]).startswith("Period resets and statements of ML platform, phase 2; Berlin "
                                                   "(Zeiss AG), from Ada Consultant.")
    assert len(vevents) == len(events)
    for vevent, event in zip(vevents, events, strict=True):
        assert vevent["UID"] == event.uid
        assert vevent["DTSTART"].dt == event.day and type(vevent["DTSTART"].dt) is dt.date  # all-day
        assert vevent["DTEND"].dt == event.day + dt.timedelta(days=1)
        assert vevent["DTSTAMP"].dt == dt.datetime(2025, 3, 2, 9, 30, tzinfo=dt.UTC)
    reset = next(v for v in vevents if v["DTSTART"].dt == dt.date(2026, 7, 15) and "reset" in v["SUMMARY"])
    assert "midnight (Europe/Berlin)" in reset["DESCRIPTION"] and "20 h" in reset["SUMMARY"]
    statement = next(v for v in vevents if "statement for Jun 2026" in v["SUMMARY"])
    assert statement["DTSTART"].dt == dt.date(2026, 7, 15)
    assert statement["URL"] == "https://hours.example/h/TOKEN/statement/2026-06.pdf"


def test_long_names_in_any_script_fold_without_splitting_a_character():
    name = "データ基盤の保守契約、第二期 (Ünïcödé) " * 4
    text = write_ics(calendar_events(1, _terms(), [], dt.date(2024, 2, 1), ahead=1), _header(name.strip()))
    text.encode("utf-8").decode("utf-8")
    assert all(len(line.encode()) <= 75 for line in text.split("\r\n"))
    calendar, vevents = _parse(text)
    assert name.strip() in str(calendar["DESCRIPTION"])
    assert str(vevents[0]["SUMMARY"]).startswith(name.strip())
