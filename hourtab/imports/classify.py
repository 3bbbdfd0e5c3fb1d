"""Classifying a read file against the account's stored entries (by fingerprint), reading only:
what an import would add, leave, change, flag as missing upstream or recognise as already synced.
``importer`` writes what the plan says (through ``writing``); a preview shows its diff.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import select
from sqlalchemy.orm import Session

from hourtab.core.accounts import Account
from hourtab.core.db import columns
from hourtab.imports.coverage import coverage_of, covered_ids
from hourtab.imports.diff import build_diff
from hourtab.imports.synced import synced_twins
from hourtab.retainers.destinations import upload_destinations
from hourtab.timesheets.canonical import arrow_text, integers, iso_dates, join_fields, sha256_hex
from hourtab.timesheets.models import TimeEntry
from hourtab.timesheets.report import ReadReport

#: Fields whose difference makes a stored entry "changed" (identity fields are in the fingerprint).
COMPARED = ("duration_s", "description", "client", "project", "task", "tags", "billable", "start_at", "end_at",
            "local_date", "user_name", "timezone")


def _existing(session: Session, account: Account, frame: pd.DataFrame) -> pd.DataFrame:
    """Stored entries on the file's dates (± a day, for time-zone edges): identity and digest only."""
    first = frame["local_date"].min().date() - dt.timedelta(days=1)
    last = frame["local_date"].max().date() + dt.timedelta(days=1)
    te = TimeEntry
    cols = ["id", "fingerprint", "content_hash", "status", "source_format", "user_name", "local_date"]
    existing = pd.DataFrame(columns(session, select(*(getattr(te, c) for c in cols))
                                    .where(te.account_id == account.id, te.local_date.between(first, last)), cols))
    return existing.astype({"id": "int64", **{c: "str" for c in cols[1:-1]}}).assign(
        local_date=pd.to_datetime(existing["local_date"]))


def content_hashes(frame: pd.DataFrame) -> pd.Series:
    """sha256 over the compared fields, in a fixed text form (times as UTC epoch seconds)."""
    def epoch(col: str) -> pa.Array:
        values = frame[col]
        seconds = integers(values.dt.as_unit("s").array.asi8)
        return pc.if_else(pa.array(values.notna().to_numpy()), seconds, "")

    flags = frame["billable"].astype("object").map({True: "1", False: "0"}).fillna("")
    text = join_fields([integers(frame["duration_s"].to_numpy()), *(arrow_text(frame[c]) for c in
                 ("description", "client", "project", "task", "tags")), arrow_text(flags),
                 epoch("start_at"), epoch("end_at"), iso_dates(frame["local_date"]),
                 arrow_text(frame["user_name"]), arrow_text(frame["timezone"])])
    return sha256_hex(text, frame.index)



def _isin(values: pd.Series, candidates: pd.Series) -> np.ndarray:
    """Hash-set membership through pyarrow (pandas' own isin on strings loops in Python)."""
    if not len(values):
        return np.zeros(0, bool)
    found = pc.is_in(arrow_text(values.astype("str")), value_set=arrow_text(candidates.astype("str")))
    return found.to_numpy(zero_copy_only=False)


def _positions(values: pd.Series, candidates: pd.Series) -> np.ndarray:
    """Where each value sits in ``candidates`` (unique), -1 where absent; one hash join in pyarrow."""
    if not len(values):
        return np.zeros(0, np.int64)
    found = pc.index_in(arrow_text(values.astype("str")), value_set=arrow_text(candidates.astype("str")))
    return found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


@dataclass
class ImportPlan:
    new: pd.DataFrame
    changed_new: pd.DataFrame
    changed_old: pd.DataFrame
    unchanged: int
    missing: pd.DataFrame
    notes: list[str]
    #: The file's rows, the stored entry each one is (-1: a new entry) and whether the import
    #: writes it (new or changed), in the same order.
    frame: pd.DataFrame
    known_ids: np.ndarray
    touched: np.ndarray
    scope: str = ""
    #: Rows that are entries the tracker's live sync already brought (``synced``): not added again.
    adopted: int = 0


def plan_import(session: Session, account: Account, frame: pd.DataFrame, report: ReadReport) -> ImportPlan:
    frame = frame.assign(content_hash=content_hashes(frame))
    existing = _existing(session, account, frame)
    where = _positions(frame["fingerprint"], existing["fingerprint"])  # fingerprints are unique per account
    known = where >= 0
    twins = np.full(len(frame), -1, dtype=np.int64)
    twins[~known] = synced_twins(session, account.id, report.format, frame.loc[~known])
    adopted = twins >= 0
    new = frame.loc[~known & ~adopted]
    matched = frame.loc[known].reset_index(drop=True)
    old = existing.iloc[where[known]].reset_index(drop=True)
    differs = ((matched["content_hash"].to_numpy() != old["content_hash"].astype("str").to_numpy())
               | (old["status"].to_numpy() != "active")) if len(matched) else np.zeros(0, bool)
    notes: list[str] = []
    scope = ""
    if report.errors:
        missing = existing.iloc[0:0]
        notes.append("Entries missing from this file were not looked for, because some of its rows were skipped.")
    else:
        covers = coverage_of(frame, report.format)
        candidates = existing.loc[(existing["status"] == "active") & (existing["source_format"] == report.format)
                                  & (existing["local_date"] >= covers.first) & (existing["local_date"] <= covers.last)
                                  & ~_isin(existing["fingerprint"], frame["fingerprint"])]
        keep = covered_ids(session, account.id, [int(i) for i in candidates["id"]], covers)
        missing = candidates.loc[candidates["id"].isin(keep)]
        scope = covers.describe()
    ids = existing["id"].to_numpy(dtype=np.int64)
    known_ids = np.where(known, ids[np.maximum(where, 0)] if len(ids) else -1, twins)
    touched = ~known & ~adopted
    touched[np.flatnonzero(known)[differs]] = True
    if adopted.any():
        notes.append(f"{int(adopted.sum())} rows are entries the live sync of this tracker already brought; they "
                     "were recognised and not added again (the tracker's API figures count).")
    return ImportPlan(new=new, changed_new=matched.loc[differs], changed_old=old.loc[differs],
                 unchanged=int((~differs).sum()), missing=missing, notes=notes, scope=scope, frame=frame,
                 known_ids=known_ids, touched=touched, adopted=int(adopted.sum()))


def upload_diff(session: Session, account: Account, plan: ImportPlan, report: ReadReport,
          retainer_id: int | None) -> dict[str, Any]:
    diff = build_diff(session, plan.new, plan.changed_new, [int(i) for i in plan.changed_old["id"]],
                      [int(i) for i in plan.missing["id"]], report.timezone, plan.scope)
    diff["adopted_count"] = plan.adopted
    diff["routing"] = upload_destinations(session, account.id, plan.frame, plan.known_ids, retainer_id,
                                          report.zones, touched=plan.touched)
    return diff


def preview_diff(session: Session, account: Account, frame: pd.DataFrame, report: ReadReport,
                 retainer_id: int | None) -> dict[str, Any]:
    """What confirming would do, row by row (reads only)."""
    if report.entries == 0:
        return build_diff(session, frame, frame, [], [], report.timezone, "")
    return upload_diff(session, account, plan_import(session, account, frame, report), report, retainer_id)



def skipped_rows(report: ReadReport) -> int:
    """How many of the file's lines were left out as bad rows."""
    return len({e.line for e in report.errors})
