"""The ``evidence`` table: one parsed run per row, owned by an account.

The original upload stays in blob storage (``upload_key``); the parsed columns are Parquet blobs
(``blobs``: history, system, histograms) and the small facts are JSON (``facts``), so pages and
PDFs load a run without parsing the raw file again.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, Float, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from hourtab.core.db import Base, UTCDateTime, utcnow
from hourtab.core.scoping import AccountOwned


class Evidence(AccountOwned, Base):
    __tablename__ = "evidence"
    __table_args__ = (UniqueConstraint("account_id", "upload_sha256", "part",
                                       name="uq_evidence_account_id_upload_sha256_part"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(32), nullable=False)
    name: Mapped[str] = mapped_column(String(500), nullable=False, default="")
    run_id: Mapped[str] = mapped_column(String(128), nullable=False, default="")
    project: Mapped[str] = mapped_column(String(300), nullable=False, default="")
    state: Mapped[str] = mapped_column(String(16), nullable=False, default="unknown")
    #: The uploaded file's own name (display only; never used as a path).
    source_name: Mapped[str] = mapped_column(String(300), nullable=False, default="")
    upload_key: Mapped[str] = mapped_column(String(500), nullable=False)
    upload_sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    #: Index of this run within its upload (a UI chart export can hold several runs).
    part: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    steps: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    runtime_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    #: Blob keys of the Parquet columns: {"history": …, "system": …, "histograms": …}.
    blobs: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    #: Everything else of the RunEvidence plus the inspect summary (JSON-safe: no NaN).
    facts: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
