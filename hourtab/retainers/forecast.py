"""Where the current period is heading at the pace so far, in whole days and exact integers.

Pace is hours used per elapsed day (today counts as elapsed), so the answer is the same whether
the page is rendered at 09:00 or 23:00 and a client can check it with a pencil. A pace read from
a kickoff session on day 1 says nothing about the month, so there is no forecast until a quarter
of the period has passed and work was logged on several days; the page then says it is too early.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from hourtab.core.i18n import Writer
from hourtab.retainers.ledger import PeriodBalance
from hourtab.retainers.presentation import format_hours

#: Evidence a forecast needs: this share of the period elapsed, and entries on this many days.
MIN_ELAPSED_SHARE = 4  # one quarter
MIN_WORKING_DAYS = 3


@dataclass(frozen=True)
class Forecast:
    kind: str  # "none" | "too_early" | "run_out" | "on_pace" | "ran_out" | "closed"
    text: str
    projected_s: int | None = None
    run_out_on: dt.date | None = None
    #: How the figure was computed (or why there is none), in words a client can check.
    basis: str = ""


def _days(n: int, w: Writer) -> str:
    return w.ngettext("%(n)s day", "%(n)s days", n) % {"n": n}


def forecast(balance: PeriodBalance, daily_used: dict[dt.date, int], today: dt.date,
             w: Writer | None = None) -> Forecast:
    """Forecast the period ``balance`` from its per-day usage as of the local date ``today``, in the
    words of ``w`` (the client's language; default English)."""
    w = w or Writer()
    period = balance.period
    available, used = balance.available_s, balance.used_s
    if today >= period.end:
        return Forecast("closed", w.gettext("this period is closed"))
    if available <= 0 < used or (used >= available > 0):
        total = 0
        for day in sorted(daily_used):
            total += daily_used[day]
            if total >= available:
                return Forecast("ran_out", w.gettext("hours ran out on %(day)s") % {"day": w.short_day(day)}, used, day)
        return Forecast("ran_out", w.gettext("no hours are left this period"), used)
    if used <= 0:
        return Forecast("none", w.gettext("no hours used yet this period"), 0)
    # Days elapsed through today, or through the last entry if the tracker holds later ones.
    elapsed = max(1, (max([today, *daily_used]) - period.start).days + 1)
    worked = sum(1 for s in daily_used.values() if s > 0)
    needed = -(-period.days // MIN_ELAPSED_SHARE)
    if elapsed < needed or worked < MIN_WORKING_DAYS:
        return Forecast("too_early", w.gettext("too early to forecast"), basis=w.gettext(
            "%(elapsed)s of %(total)s elapsed, work logged on %(worked)s; a forecast needs %(needed)s elapsed "
            "and work on %(working)s") % {"elapsed": _days(elapsed, w), "total": period.days,
                                           "worked": _days(worked, w), "needed": _days(needed, w),
                                           "working": _days(MIN_WORKING_DAYS, w)})
    projected = used * period.days // elapsed
    basis = w.gettext("%(used)s h over the first %(elapsed)s (work on %(worked)s), continued at the same "
                      "daily pace for all %(total)s days") % {
        "used": format_hours(used), "elapsed": _days(elapsed, w), "worked": _days(worked, w), "total": period.days}
    if projected > available:
        # First day k (1-based) on which k days at this pace reach the available hours.
        k = -(-available * elapsed // used)
        day = period.start + dt.timedelta(days=k - 1)
        return Forecast("run_out", w.gettext("at this pace, hours run out on %(day)s") % {"day": w.short_day(day)},
                        projected, day, basis)
    text = w.gettext("on pace to use %(projected)s of %(available)s h") % {
        "projected": format_hours(projected, 1), "available": format_hours(available)}
    return Forecast("on_pace", text, projected, basis=basis)
