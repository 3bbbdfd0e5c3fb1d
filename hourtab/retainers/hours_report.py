"""Everything the client sees about one retainer, computed once and shared by every format.

The page, the JSON, the CSV, the statement PDF and the feed all read one ``HoursReport``, so they
cannot disagree: the headline on the page is the headline in the JSON.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from hourtab.core.i18n import writer
from hourtab.retainers.chart import burnup_svgs
from hourtab.retainers.forecast import Forecast, forecast
from hourtab.retainers.ledger import Ledger, PeriodBalance
from hourtab.retainers.periods import local_date
from hourtab.retainers.presentation import headline, hours_formatter, used_percent
from hourtab.retainers.pricing import PeriodMoney, price_periods
from hourtab.retainers.revisions import Revision
from hourtab.retainers.terms import Terms


@dataclass(frozen=True)
class RetainerInfo:
    """The public face of a retainer: names and contact (who did each entry is on the entries)."""

    name: str
    client: str
    consultant_name: str
    consultant_contact: str
    terms: Terms
    #: "decimal" (0.67 h) or "hm" (0:40 h), as the consultant chose.
    hours_unit: str = "decimal"
    #: What the client's documents are written in (``hourtab.core.i18n.LANGUAGES``).
    language: str = "en"

    @property
    def shown_contact(self) -> str:
        """The contact beside the name, unless it would repeat it (no display name set)."""
        return "" if self.consultant_contact == self.consultant_name else self.consultant_contact


@dataclass(frozen=True)
class EntryLine:
    day: dt.date
    start: str  # local "HH:MM", or "" when the tracker exported dates only
    duration_s: int
    rounded_s: int
    project: str
    task: str
    description: str
    #: Who did the work, as the export names them ("" when it names nobody).
    person: str = ""


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
    #: Revisions of closed periods (``revisions.Revision``), oldest first, by period start.
    revisions: dict[dt.date, tuple[Revision, ...]] = field(default_factory=dict)
    #: The same chart drawn for a phone's width (the page shows one or the other).
    chart_svg_narrow: str = ""
    #: Everyone the current period's entries name; the page has a person column when it is a team.
    people: tuple[str, ...] = ()
    #: Each period's amounts (``pricing.PeriodMoney``, ``None`` for a period sold in hours only), in order.
    money: tuple[PeriodMoney | None, ...] = ()

    @property
    def current(self) -> PeriodBalance:
        return self.ledger.current

    def revision_of(self, start: dt.date) -> Revision | None:
        """The latest revision of the period starting on ``start``, or ``None``."""
        found = self.revisions.get(start)
        return found[-1] if found else None

    @property
    def current_money(self) -> PeriodMoney | None:
        """The current period's amounts, or ``None`` when it is sold in hours only."""
        return self.money[self.ledger.current_index] if self.money else None

    @property
    def fmt(self) -> Callable[[int], str]:
        """Seconds → hours text in the consultant's unit (``0.67`` or ``0:40``)."""
        return hours_formatter(self.info.hours_unit)


def _text(value: object) -> str:
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def entry_lines(ledger: Ledger, frame: pd.DataFrame) -> list[EntryLine]:
    """Rows of the ledger's entry frame as display lines, times in the retainer's zone.

    Columns become plain lists first: iterating pandas Series boxes every value (a ``Timestamp``
    per day), which cost more than the rest of a cold page for a busy period.
    """
    tz = ledger.terms.timezone
    starts = pd.to_datetime(frame["start_at"], utc=True).dt.tz_convert(tz).dt.strftime("%H:%M").tolist()
    days = frame["day"].to_numpy(dtype="datetime64[ns]").astype("datetime64[D]").tolist()
    blank = [""] * len(frame)
    cols = {c: frame[c].tolist() if c in frame else blank for c in ("project", "task", "description", "user_name")}
    return [EntryLine(day=d, start=s if isinstance(s, str) else "", duration_s=int(dur),
                      rounded_s=int(r), project=_text(p), task=_text(t), description=_text(desc),
                      person=_text(who).strip())
            for d, s, dur, r, p, t, desc, who in zip(days, starts, frame["duration_s"].tolist(),
                                                       frame["rounded_s"].tolist(), cols["project"], cols["task"],
                                                       cols["description"], cols["user_name"], strict=True)]


def daily_used(ledger: Ledger, index: int, frame: pd.DataFrame | None = None) -> dict[dt.date, int]:
    """Rounded seconds per local day of period ``index`` (``frame``: its entries, if already cut)."""
    frame = ledger.period_entries(index) if frame is None else frame
    if not len(frame):
        return {}
    sums = frame.groupby("day", sort=True)["rounded_s"].sum()
    days = sums.index.to_numpy(dtype="datetime64[ns]").astype("datetime64[D]").tolist()
    return dict(zip(days, (int(s) for s in sums.tolist()), strict=True))


def build_report(info: RetainerInfo, ledger: Ledger, as_of: dt.datetime, updated_at: dt.datetime | None,
                 revisions: dict | None = None) -> HoursReport:
    """The report of ``ledger``, which holds the current period's entries with their text."""
    today = local_date(as_of, info.terms.tz)
    current = ledger.current
    current_entries = ledger.period_entries(ledger.current_index)
    daily = daily_used(ledger, ledger.current_index, current_entries)
    lines = entry_lines(ledger, current_entries)
    groups: dict[dt.date, list[EntryLine]] = {}
    for line in lines:
        groups.setdefault(line.day, []).append(line)
    days = tuple(DayGroup(day, sum(e.rounded_s for e in items), tuple(items))
                 for day, items in sorted(groups.items(), reverse=True))
    wide, narrow = burnup_svgs(current.period, current.available_s, daily, today, inline=True,
                               w=writer(info.language))
    return HoursReport(
        info=info, ledger=ledger, as_of=as_of, today=today, updated_at=updated_at,
        headline=headline(current, info.hours_unit, writer(info.language)), percent=used_percent(current),
        forecast=forecast(current, daily, today, writer(info.language)), chart_svg=wide, days=days, chart_svg_narrow=narrow,
        people=tuple(sorted({line.person for line in lines if line.person})), revisions=revisions or {},
        money=tuple(price_periods(ledger)))
