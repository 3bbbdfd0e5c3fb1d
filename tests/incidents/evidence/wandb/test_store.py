"""Stored evidence on SQLite and PostgreSQL: ingest once, load back from Parquet, refuse cleanly."""

from __future__ import annotations

import zipfile

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import func, select

from hourtab.core.blobs import LocalBlobStore
from hourtab.core.db import transaction
from incidents.errors import EvidenceNotFound, InvalidEvidence
from incidents.evidence import store
from incidents.evidence.models import Evidence
from incidents.evidence.wandb import load_run
from tests.factories import make_account


def _zip_run(run_dir, path):
    with zipfile.ZipFile(path, "w") as z:
        for f in run_dir.rglob("*"):
            if f.is_file():
                z.write(f, f"wandb/{run_dir.name}/{f.relative_to(run_dir)}")
    return path


@pytest.fixture
def account(db_session):
    return make_account(db_session, "ev@example.com")


@pytest.mark.torch
def test_ingest_and_load_back_without_reparsing(db_session, account, wandb_runs, tmp_path):
    blobs = LocalBlobStore(tmp_path / "blobs")
    upload = _zip_run(wandb_runs["watched"]["dir"], tmp_path / "upload.zip")
    with transaction(db_session):
        rows = store.ingest_upload(db_session, account.id, upload, "my <run>.zip", blobs)
    assert len(rows) == 1 and rows[0].steps == 20 and rows[0].name == "watched"
    original = load_run(upload)
    upload.unlink()                                   # loading must not need the upload
    loaded = store.evidence_from_row(store.get_evidence(db_session, account.id, rows[0].id), blobs)
    assert loaded.run_id == original.run_id and loaded.config == original.config
    assert loaded.environment == original.environment and loaded.tags == original.tags
    pd.testing.assert_frame_equal(loaded.history, original.history)
    pd.testing.assert_frame_equal(loaded.system, original.system)
    assert loaded.histogram_counts == original.histogram_counts
    assert len(loaded.histograms) == len(original.histograms)
    for a, b in zip(loaded.histograms["counts"], original.histograms["counts"], strict=True):
        assert np.array_equal(a, b)
    assert loaded.started_at == original.started_at
    assert blobs.get_bytes(rows[0].upload_key)[:2] == b"PK"
    # re-importing the same bytes changes nothing
    again = _zip_run(wandb_runs["watched"]["dir"], tmp_path / "again.zip")
    with transaction(db_session):
        same = store.ingest_upload(db_session, account.id, again, "again.zip", blobs)
    assert [r.id for r in same] == [rows[0].id]
    assert db_session.scalar(select(func.count(Evidence.id))) == 1


def test_refused_upload_stores_nothing(db_session, account, tmp_path):
    blobs = LocalBlobStore(tmp_path / "blobs")
    bad = tmp_path / "evil.zip"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("../escape", "x")
    with pytest.raises(InvalidEvidence), transaction(db_session):
        store.ingest_upload(db_session, account.id, bad, "evil.zip", blobs)
    assert db_session.scalar(select(func.count(Evidence.id))) == 0
    assert not (tmp_path / "blobs").exists() or not any((tmp_path / "blobs").rglob("*.*"))


def test_evidence_of_another_account_is_not_found(db_session, account, tmp_path):
    blobs = LocalBlobStore(tmp_path / "blobs")
    csv = tmp_path / "chart.csv"
    csv.write_text("Step,a - loss,b - loss\n0,1,2\n1,0.5,\n")
    with transaction(db_session):
        rows = store.ingest_upload(db_session, account.id, csv, "chart.csv", blobs)
    other = make_account(db_session, "other@example.com")
    assert [r.name for r in rows] == ["a", "b"] and [r.part for r in rows] == [0, 1]
    with pytest.raises(EvidenceNotFound):
        store.get_evidence(db_session, other.id, rows[0].id)
