"""The ledger computed from scratch over every entry: the check the day totals are held to.

Production reads ledgers from day totals (``hourtab.retainers.totals``); this sums a frame of
entries instead, each entry's day computed from its start in the retainer's zone, so the tests
can state what the figures must be without trusting the stored days or the ``GROUP BY``. It shares
only the arithmetic over periods (``period_balances``) and the placing of entries in periods.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import numpy as np
import pandas as pd

from hourtab.retainers.ledger import Credit, Ledger, empty_entries, period_balances, placed, terms_for
from hourtab.retainers.periods import local_date, periods_through
from hourtab.retainers.rounding import round_array
from hourtab.retainers.terms import Terms


def _entry_days(entries: pd.DataFrame, terms: Terms) -> pd.Series:
    """Each entry's local date in the retainer's zone; trackers without times give a date only."""
    start = pd.to_datetime(entries["start_at"], utc=True)
    local = start.dt.tz_convert(terms.timezone).dt.tz_localize(None).dt.normalize()
    fallback = pd.to_datetime(entries["local_date"]).dt.normalize()
    return local.fillna(fallback).astype("datetime64[ns]")


def build_ledger(terms: Terms, entries: pd.DataFrame, credits: Sequence[Credit] = (),
                 as_of: dt.datetime | None = None,
                 schedule: Sequence[tuple[dt.date, Terms]] = ()) -> Ledger:
    """Compute every period from the start through the one containing ``as_of`` (or the last entry).

    ``terms`` gives the period structure (start, kind, reset day, time zone); ``schedule`` the
    terms versions, each applying from the period that starts on or after its date (default:
    ``terms`` throughout). A period's allotment, rounding, rollover and overage are its version's.
    """
    as_of = as_of or dt.datetime.now(dt.UTC)
    schedule = tuple(sorted(schedule, key=lambda v: v[0])) or ((terms.start, terms),)
    today = local_date(as_of, terms.tz)
    frame = entries.copy() if len(entries) else empty_entries()
    frame["day"] = _entry_days(frame, terms) if len(frame) else pd.Series(dtype="datetime64[ns]")

    last_day = max([today, *[c.on for c in credits]])
    if len(frame):
        last_day = max(last_day, frame["day"].max().date())
    periods = periods_through(terms, last_day)
    period_terms = [terms_for(schedule, p.start) for p in periods]
    before = frame[frame["day"] < np.datetime64(periods[0].start, "ns")].copy()
    before["rounded_s"] = round_array(before["duration_s"].to_numpy(dtype=np.int64), period_terms[0].rounding)
    frame = placed(frame, periods, period_terms)

    index = frame["period"].to_numpy(dtype=np.int64)
    used = np.zeros(len(periods), dtype=np.int64)
    np.add.at(used, index, frame["rounded_s"].to_numpy(dtype=np.int64))
    counts = np.bincount(index, minlength=len(periods))
    balances, current_index = period_balances(periods, period_terms, [int(u) for u in used],
                                              [int(c) for c in counts], credits, today)
    return Ledger(terms=period_terms[current_index], periods=balances, current_index=current_index, entries=frame,
                  before_start=before, credits=tuple(sorted(credits, key=lambda c: (c.on, c.id or 0))),
                  schedule=schedule, before_count=len(before))
