"""Ingest uploads into per-account evidence, and load it back without re-parsing.

``ingest_path`` parses first (refusing bad input before anything is stored), then writes the
upload and Parquet columns to blob storage and adds rows; it never commits (callers wrap it in
``transaction(session)``), and its blob writes join the session's transaction, so a failed or
rolled-back import leaves nothing behind. Re-importing the same bytes returns the existing rows.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy.orm import Session

from hourtab.core import progress
from hourtab.core.blobs import BlobStore, joined
from hourtab.core.errors import InvalidInput
from hourtab.core.scoping import get_owned, select_owned
from incidents.errors import EvidenceNotFound, InvalidEvidence
from incidents.evidence import archives
from incidents.evidence.models import Evidence
from incidents.evidence.wandb.evidence import RunEvidence, empty_histograms
from incidents.evidence.wandb.loader import load_runs
from incidents.evidence.wandb.summaries import inspect_dict

UPLOAD_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar", ".wandb", ".csv", ".json", ".jsonl", ".parquet")


def upload_suffix(name: str) -> str:
    lower = name.lower()
    for suffix in UPLOAD_SUFFIXES:
        if lower.endswith(suffix):
            return suffix
    raise InvalidEvidence(f"{name!r} is not a file HourTab reads: upload one of " + ", ".join(UPLOAD_SUFFIXES))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def upload_key(account_id: int, sha: str, original_name: str) -> str:
    """Where an upload's own bytes are kept (the same key whether stored by a request or a job)."""
    return f"evidence/{account_id}/{sha}/upload{upload_suffix(original_name)}"


def ingest_upload(session: Session, account_id: int, path: Path, original_name: str, blobs: BlobStore, *,
                  max_archive_bytes: int = archives.DEFAULT_MAX_BYTES,
                  max_members: int = archives.DEFAULT_MAX_MEMBERS, sha256: str | None = None) -> list[Evidence]:
    """Parse ``path`` (an archive, .wandb or export) and store each run in it for the account.

    ``sha256``: the file's digest when staging computed it already (``hourtab.core.staging``)."""
    return [row for row, _ in ingest_path(session, account_id, path, blobs, original_name, sha256=sha256,
                                          max_archive_bytes=max_archive_bytes, max_members=max_members)]


def ingest_stored_upload(session: Session, account_id: int, blobs: BlobStore, key: str, filename: str, size: int,
                         *, max_archive_bytes: int = archives.DEFAULT_MAX_BYTES,
                         max_members: int = archives.DEFAULT_MAX_MEMBERS, sha256: str | None = None
                         ) -> list[Evidence]:
    """Ingest an upload kept in blob storage under ``key`` (a queued ingest): fetch, check, parse, store.

    An archive over the limits is refused from its directory, in well under a second. Refused
    input fails the same way on every retry, so nothing of it is kept.
    """
    with tempfile.TemporaryDirectory(prefix="hourtab-job-") as tmp:
        path = Path(tmp) / f"upload{upload_suffix(filename)}"
        progress.report("Fetching the upload", 0, size)
        blobs.get_file(key, path)
        progress.report("Fetching the upload", size, size)
        try:   # an archive is checked from its directory before anything is unpacked (archives.py)
            return ingest_upload(session, account_id, path, filename, blobs, max_archive_bytes=max_archive_bytes,
                                 max_members=max_members, sha256=sha256)
        except InvalidInput:
            blobs.delete(key)
            raise


def ingest_path(session: Session, account_id: int, path: Path, blobs: BlobStore, original_name: str | None = None,
                sha256: str | None = None, **limits: int) -> list[tuple[Evidence, RunEvidence | None]]:
    """Store the runs of a file or a run folder; each row comes with the run just parsed from it.

    A folder is read where it is; what is kept of it is a ``.tar.gz`` written straight into the
    blob store. Re-ingesting the same content returns the stored rows, without a parsed run.
    """
    path = Path(path)
    if path.is_dir():
        sha, suffix, name = folder_sha256(path), ".tar.gz", f"{path.name}.tar.gz"
    else:
        name = original_name or path.name
        sha, suffix = sha256 or sha256_file(path), upload_suffix(name)  # staging hashed it already
        if not path.name.lower().endswith(suffix):
            raise ValueError(f"save the upload under a name ending in {suffix} before ingesting it")
    existing = session.scalars(select_owned(Evidence, account_id).where(Evidence.upload_sha256 == sha)
                               .order_by(Evidence.part)).all()
    if existing:
        return [(row, None) for row in existing]
    runs = load_runs(path, display_name=original_name, **limits)
    blobs = joined(session, blobs)  # a rollback removes what this wrote
    prefix = f"evidence/{account_id}/{sha}"
    upload_key = f"{prefix}/upload{suffix}"
    if path.is_dir():
        with tempfile.TemporaryDirectory() as tmp:
            archives.tar_folder(path, Path(tmp) / name)
            blobs.put_file(upload_key, Path(tmp) / name)
    elif not blobs.exists(upload_key):  # a queued ingest stored the upload before the job ran
        blobs.put_file(upload_key, path)
    rows: list[tuple[Evidence, RunEvidence | None]] = []
    for part, run in enumerate(runs):
        keys = {}
        for kind, frame in (("history", run.history), ("system", run.system), ("histograms", _histos(run))):
            keys[kind] = f"{prefix}/{part}-{kind}.parquet"
            blobs.put_bytes(keys[kind], _parquet(frame))
        row = Evidence(account_id=account_id, kind=run.kind, name=run.name[:500], run_id=run.run_id[:128],
                       project=run.project[:300], state=run.state, source_name=name[:300],
                       upload_key=upload_key, upload_sha256=sha, part=part, steps=run.steps,
                       runtime_s=run.runtime_s, blobs=keys, facts=_facts(run))
        session.add(row)
        rows.append((row, run))
    session.flush()
    return rows


def folder_sha256(folder: Path) -> str:
    """A digest of a folder's regular files: their relative paths and contents, in sorted order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + sha256_file(path).encode())
    return digest.hexdigest()


def list_evidence(session: Session, account_id: int) -> list[Evidence]:
    return list(session.scalars(select_owned(Evidence, account_id).order_by(Evidence.created_at.desc(),
                                                                            Evidence.id.desc())))


def get_evidence(session: Session, account_id: int, evidence_id: int) -> Evidence:
    return get_owned(session, Evidence, account_id, evidence_id,
                     missing=EvidenceNotFound(f"evidence {evidence_id} not found"))


def evidence_from_row(row: Evidence, blobs: BlobStore) -> RunEvidence:
    """The stored run as a RunEvidence, from Parquet and JSON only (the upload is not read)."""
    facts = row.facts
    histos = _read_parquet(blobs, row.blobs["histograms"])
    if len(histos):
        histos["bins"] = _arrays(histos["bins"])
        histos["counts"] = _arrays(histos["counts"])
    else:
        histos = empty_histograms()
    return RunEvidence(
        kind=row.kind, run_id=row.run_id, name=row.name, project=row.project, tags=list(facts.get("tags", [])),
        state=row.state, started_at=_time(facts.get("started_at")), ended_at=_time(facts.get("ended_at")),
        runtime_s=row.runtime_s, environment=dict(facts.get("environment", {})),
        config=dict(facts.get("config", {})), summary=dict(facts.get("summary", {})),
        history=_read_parquet(blobs, row.blobs["history"]), system=_read_parquet(blobs, row.blobs["system"]),
        histograms=histos, warnings=list(facts.get("warnings", [])),
        histogram_counts=dict(facts.get("histogram_counts", {})), media=dict(facts.get("media", {})),
        ending=dict(facts.get("ending", {})), nonfinite=facts.get("nonfinite"))


def _histos(run: RunEvidence) -> pd.DataFrame:
    frame = run.histograms.copy()
    frame["bins"] = _arrays(frame["bins"])
    frame["counts"] = _arrays(frame["counts"])
    return frame


def _arrays(cells: pd.Series) -> pd.Series:
    """A column of float64 arrays, one per cell (Parquet hands back lists)."""
    return pd.Series([np.asarray(c, dtype=np.float64) for c in cells], index=cells.index, dtype=object)


def _parquet(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer)
    return buffer.getvalue()


def _read_parquet(blobs: BlobStore, key: str) -> pd.DataFrame:
    return pd.read_parquet(io.BytesIO(blobs.get_bytes(key)))


def _facts(run: RunEvidence) -> dict[str, Any]:
    return jsonable({
        "tags": run.tags, "started_at": run.started_at.isoformat() if run.started_at else None,
        "ended_at": run.ended_at.isoformat() if run.ended_at else None,
        "environment": run.environment, "config": run.config, "summary": run.summary,
        "warnings": run.warnings, "histogram_counts": run.histogram_counts, "inspect": inspect_dict(run),
        "media": run.media, "ending": run.ending, "nonfinite": run.nonfinite,
    })


def jsonable(value: Any) -> Any:
    """JSON both databases accept: NaN/inf become null, numpy scalars become Python numbers."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _time(value: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value) if value else None

