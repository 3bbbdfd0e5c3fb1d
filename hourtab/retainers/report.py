"""Everything the client sees about one retainer, computed once and shared by every format.

The page, the JSON, the CSV, the statement PDF and the feed all read one ``HoursReport``, so they
cannot disagree: the headline on the page is the headline in the JSON.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pandas as pd

from hourtab.retainers.chart import burnup_svg
from hourtab.retainers.forecast import Forecast, forecast
from hourtab.retainers.headline import headline, used_percent
from hourtab.retainers.ledger import Ledger
from hourtab.retainers.periods import local_date
from hourtab.retainers.terms import Terms


@dataclass(frozen=True)
class RetainerInfo:
    """The public face of a retainer: names and contact only, never who did the work."""

    name: str
    client: str
    consultant_name: str
    consultant_contact: str
    terms: Terms


@dataclass(frozen=True)
class EntryLine:
    day: dt.date
    start: str  # local "HH:MM", or "" when the tracker exported dates only
    duration_s: int
    rounded_s: int
    project: str
    task: str
    description: str


@dataclass(frozen=True)
class DayGroup:
    day: dt.date
    total_s: int
    entries: tuple[EntryLine, ...]


@dataclass(frozen=True)
class HoursReport:
    info: RetainerInfo
    ledger: Ledger
    as_of: dt.datetime
    today: dt.date
    updated_at: dt.datetime | None
    headline: str
    percent: int
    forecast: Forecast
    chart_svg: str
    days: tuple[DayGroup, ...]  # the current period's sessions, newest day first

    @property
    def current(self):
        return self.ledger.current


def _text(value: object) -> str:
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def entry_lines(ledger: Ledger, frame: pd.DataFrame) -> list[EntryLine]:
    """Rows of the ledger's entry frame as display lines, times in the retainer's zone."""
    tz = ledger.terms.timezone
    starts = pd.to_datetime(frame["start_at"], utc=True).dt.tz_convert(tz).dt.strftime("%H:%M")
    cols = {c: frame[c] if c in frame else pd.Series("", index=frame.index)
            for c in ("project", "task", "description")}
    return [EntryLine(day=d.date(), start=_text(s) if isinstance(s, str) else "", duration_s=int(dur),
                      rounded_s=int(r), project=_text(p), task=_text(t), description=_text(desc))
            for d, s, dur, r, p, t, desc in zip(frame["day"], starts, frame["duration_s"], frame["rounded_s"],
                                                  cols["project"], cols["task"], cols["description"],
                                                  strict=True)]


def daily_used(ledger: Ledger, index: int) -> dict[dt.date, int]:
    frame = ledger.period_entries(index)
    if not len(frame):
        return {}
    return {d.date(): int(s) for d, s in frame.groupby("day")["rounded_s"].sum().items()}


def build_report(info: RetainerInfo, ledger: Ledger, as_of: dt.datetime, updated_at: dt.datetime | None,
                 current_entries: pd.DataFrame | None = None) -> HoursReport:
    """``current_entries``: the current period's rows of the ledger's frame with their text, when
    the ledger was built without it (see ``service.hours_report``)."""
    today = local_date(as_of, info.terms.tz)
    current = ledger.current
    daily = daily_used(ledger, ledger.current_index)
    if current_entries is None:
        current_entries = ledger.period_entries(ledger.current_index)
    lines = entry_lines(ledger, current_entries)
    groups: dict[dt.date, list[EntryLine]] = {}
    for line in lines:
        groups.setdefault(line.day, []).append(line)
    days = tuple(DayGroup(day, sum(e.rounded_s for e in items), tuple(items))
                 for day, items in sorted(groups.items(), reverse=True))
    return HoursReport(
        info=info, ledger=ledger, as_of=as_of, today=today, updated_at=updated_at,
        headline=headline(current), percent=used_percent(current),
        forecast=forecast(current, daily, today),
        chart_svg=burnup_svg(current.period, current.available_s, daily, today, inline=True), days=days)
