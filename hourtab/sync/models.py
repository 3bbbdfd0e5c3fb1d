"""Tables of live sync: a connection per tracker account, and which entry each tracker id became.

``sync_entries`` is keyed on (connection, tracker entry id): the tracker's id is the entry's identity,
so an edit upstream updates the same row and a deletion removes it. ``entry_id`` is unique, so one
stored entry (a synced one, or a CSV-imported one the sync adopted) answers to one tracker entry only.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, LargeBinary, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from hourtab.core.db import Base, UTCDateTime, utcnow
from hourtab.core.scoping import AccountOwned

#: A connection's states: syncing on schedule, paused (by the consultant or by a refused token), or
#: waiting for the consultant to choose which of the token's workspaces to read.
STATUSES = ("active", "paused", "choose_workspace")


class Connection(AccountOwned, Base):
    __tablename__ = "sync_connections"
    __table_args__ = (
        UniqueConstraint("account_id", "tracker", "api_url", "workspace",
                         name="uq_sync_connections_account_id_tracker"),
        Index("ix_sync_connections_status_next_sync_at", "status", "next_sync_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tracker: Mapped[str] = mapped_column(String(16), nullable=False)
    #: Scheme and host (and path prefix) the documented paths are appended to; "" = the public host.
    api_url: Mapped[str] = mapped_column(String(300), nullable=False, default="")
    #: Toggl workspace id, Clockify workspace id, Harvest account id; "" where there is none (Kimai).
    workspace: Mapped[str] = mapped_column(String(100), nullable=False, default="")
    tracker_user_id: Mapped[str] = mapped_column(String(100), nullable=False, default="")
    tracker_user: Mapped[str] = mapped_column(String(200), nullable=False, default="")
    #: The zone entries' local dates are read in: the tracker profile's, else the account's.
    timezone: Mapped[str] = mapped_column(String(64), nullable=False, default="UTC")
    #: The API token, Fernet-encrypted (``hourtab.sync.token_box``); deleted with the connection.
    token_sealed: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    token_hint: Mapped[str] = mapped_column(String(8), nullable=False, default="…")
    status: Mapped[str] = mapped_column(String(20), nullable=False, default="active")
    #: Why the connection is paused, as the Connections page shows it ("" when active).
    pause_reason: Mapped[str] = mapped_column(Text, nullable=False, default="")
    #: Workspaces the token reaches, [(id, label)], while the consultant chooses one.
    choices: Mapped[list[Any]] = mapped_column(JSON, nullable=False, default=list)
    #: Where the next increment starts (per tracker), and when the last full re-read was.
    cursor: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    #: The upload row that synced entries hang on (entries need one; it also dates "last import").
    upload_id: Mapped[int | None] = mapped_column(ForeignKey("uploads.id", ondelete="SET NULL"), nullable=True)
    next_sync_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    last_sync_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    last_success_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    last_result: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    #: The last sync's error, safe to show ("" after a success).
    last_error: Mapped[str] = mapped_column(Text, nullable=False, default="")
    failures: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    #: The sync job holding this connection; a second sync runs only once that job's lease is gone.
    lock_job_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    #: The newest sync job queued for it, so "Sync now" and the schedule never queue a second one.
    last_job_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)


class SyncedEntry(Base):
    """One tracker entry id and the stored entry it is, with a digest of how the tracker last had it."""

    __tablename__ = "sync_entries"
    __table_args__ = (UniqueConstraint("entry_id", name="uq_sync_entries_entry_id"),)

    connection_id: Mapped[int] = mapped_column(ForeignKey("sync_connections.id", ondelete="CASCADE"),
                                               primary_key=True)
    external_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    entry_id: Mapped[int] = mapped_column(ForeignKey("time_entries.id", ondelete="CASCADE"), nullable=False)
    #: The importer's content hash of the tracker's values when last seen: a change upstream is a new
    #: digest, whatever the stored entry holds (an adopted CSV entry keeps the values it was imported with).
    remote_hash: Mapped[str] = mapped_column(String(64), nullable=False)
