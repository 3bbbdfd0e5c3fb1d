"""Tables of the importer: uploads (the audit trail), time entries, their history, import profiles.

``time_entries`` is unique on (account_id, fingerprint): that constraint, not a check in Python,
is what keeps two concurrent imports of overlapping files from adding the same entry twice.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, cast

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from hourtab.core.db import Base, UTCDateTime, utcnow
from hourtab.core.scoping import AccountOwned


class Upload(AccountOwned, Base):
    """One file the consultant gave us, kept byte for byte in the blob store, with what importing it did."""

    __tablename__ = "uploads"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    filename: Mapped[str] = mapped_column(String(255), nullable=False)
    #: Where the file's bytes are kept (``uploads.csv_key``); none for a tracker's live sync, which has no file.
    blob_key: Mapped[str | None] = mapped_column(String(300), nullable=True)
    size_bytes: Mapped[int] = mapped_column(BigInteger, nullable=False)
    sha256: Mapped[str] = mapped_column(String(64), nullable=False, index=True)
    #: "imported" once confirmed; before that, why it waits: "staged" (ready), "bad_rows",
    #: "needs_date_order", "needs_mapping", or "refused" (the file cannot be read as entries).
    status: Mapped[str] = mapped_column(String(16), nullable=False, default="imported")
    format: Mapped[str] = mapped_column(String(32), nullable=False, default="")
    explanation: Mapped[str] = mapped_column(Text, nullable=False, default="")
    #: The import options chosen for the file (``importer.ImportOptions.as_dict``); once imported,
    #: also the zone(s) its times were read in.
    options: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    retainer_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    created_by: Mapped[str] = mapped_column(String(320), nullable=False, default="")
    imported_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    rows_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    new_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    unchanged_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    changed_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    missing_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    skipped_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    total_seconds: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    first_date: Mapped[dt.date | None] = mapped_column(Date, nullable=True)
    last_date: Mapped[dt.date | None] = mapped_column(Date, nullable=True)
    #: The rows left out when the consultant chose "import the valid rows" (line, column, value, message).
    skipped_rows: Mapped[list[dict[str, Any]]] = mapped_column(JSON, nullable=False, default=list)
    warnings: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    #: The rows the import added, changed (field: old → new) and flagged for removal, as previewed.
    diff: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)


class TimeEntry(AccountOwned, Base):
    """One normalised entry; duration in exact whole seconds, times in UTC where the export had them."""

    __tablename__ = "time_entries"
    __table_args__ = (
        UniqueConstraint("account_id", "fingerprint", name="uq_time_entries_account_id_fingerprint"),
        Index("ix_time_entries_account_id_local_date", "account_id", "local_date"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64), nullable=False)
    #: sha256 of the compared values: a re-import compares one string per entry, not twelve fields.
    content_hash: Mapped[str] = mapped_column(String(64), nullable=False, default="")
    start_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    end_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    local_date: Mapped[dt.date] = mapped_column(Date, nullable=False)
    timezone: Mapped[str] = mapped_column(String(64), nullable=False, default="UTC")
    duration_s: Mapped[int] = mapped_column(Integer, nullable=False)
    client: Mapped[str] = mapped_column(Text, nullable=False, default="")
    project: Mapped[str] = mapped_column(Text, nullable=False, default="")
    task: Mapped[str] = mapped_column(Text, nullable=False, default="")
    description: Mapped[str] = mapped_column(Text, nullable=False, default="")
    tags: Mapped[str] = mapped_column(Text, nullable=False, default="")
    billable: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    user_name: Mapped[str] = mapped_column(Text, nullable=False, default="")
    source_format: Mapped[str] = mapped_column(String(32), nullable=False)
    source_line: Mapped[int] = mapped_column(Integer, nullable=False)
    upload_id: Mapped[int] = mapped_column(ForeignKey("uploads.id"), index=True, nullable=False)
    status: Mapped[str] = mapped_column(String(20), nullable=False, default="active")
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class TimeEntryChange(AccountOwned, Base):
    """The old values of an entry each time an import (or the consultant) changed it."""

    __tablename__ = "time_entry_changes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    entry_id: Mapped[int] = mapped_column(ForeignKey("time_entries.id", ondelete="CASCADE"), index=True,
                                          nullable=False)
    upload_id: Mapped[int | None] = mapped_column(ForeignKey("uploads.id", ondelete="SET NULL"), index=True,
                                                  nullable=True)
    #: "changed", "missing_upstream", "reappeared" or "removed".
    kind: Mapped[str] = mapped_column(String(20), nullable=False)
    old_values: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    changed_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


#: The two tables written in bulk through Core (one INSERT for thousands of rows, no ORM objects).
#: A declarative class's ``__table__`` is typed as any FromClause; these are Tables.
time_entries = cast(Table, TimeEntry.__table__)
time_entry_changes = cast(Table, TimeEntryChange.__table__)


class ImportProfile(AccountOwned, Base):
    """A saved column mapping for a CSV we do not recognise, chosen once and reused by name."""

    __tablename__ = "import_profiles"
    __table_args__ = (UniqueConstraint("account_id", "name", name="uq_import_profiles_account_id_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), nullable=False)
    mapping: Mapped[dict[str, str]] = mapped_column(JSON, nullable=False, default=dict)
    duration_unit: Mapped[str] = mapped_column(String(16), nullable=False, default="auto")
    date_order: Mapped[str | None] = mapped_column(String(3), nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class TrackerZone(AccountOwned, Base):
    """The zone a tracker writes this account's exports in: the tracker profile's, as a connection reported it.

    A tracker's CSV export writes wall-clock times in the exporting person's profile zone, whatever
    the client's, so an upload of that tracker's export is read in it unless another zone is chosen.
    """

    __tablename__ = "tracker_zones"
    __table_args__ = (UniqueConstraint("account_id", "tracker", name="uq_tracker_zones_account_id_tracker"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    #: The export format the tracker writes (``FormatSpec.name``: "toggl", "clockify", "kimai").
    tracker: Mapped[str] = mapped_column(String(32), nullable=False)
    timezone: Mapped[str] = mapped_column(String(64), nullable=False)
    #: How pages name the tracker ("Toggl Track"), and whose profile it is.
    label: Mapped[str] = mapped_column(String(100), nullable=False, default="")
    user_name: Mapped[str] = mapped_column(String(200), nullable=False, default="")
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
