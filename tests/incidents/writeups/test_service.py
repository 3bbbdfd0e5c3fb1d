"""incidents.writeups.service on both databases: build an incident from run folders, its document, blob rollback.

The runs are the shipped reproducer output (real W&B offline runs, see
``incidents/evidence/samples/repro-tiny/PROVENANCE.md``), unpacked once into plain run folders.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select

from hourtab.core.accounts import Account
from hourtab.core.blobs import LocalBlobStore
from hourtab.core.db import transaction
from incidents.evidence import archives
from incidents.evidence.models import Evidence
from incidents.evidence.sample_data import REPRO_TINY, repro_tiny_runs
from incidents.writeups import errors, service


class CountingStore(LocalBlobStore):
    """A real local store that remembers which keys were read and written."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.reads: list[str] = []
        self.writes: list[str] = []

    def get_bytes(self, key: str) -> bytes:
        self.reads.append(key)
        return super().get_bytes(key)

    def put_bytes(self, key: str, data: bytes) -> None:
        self.writes.append(key)
        super().put_bytes(key, data)

    def put_file(self, key: str, path: Path) -> None:
        self.writes.append(key)
        super().put_file(key, path)


@pytest.fixture(scope="module")
def run_folders(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("repro-runs")
    folders = {}
    for mode, archive in repro_tiny_runs().items():
        dest = root / mode.replace(":", "-")
        archives.extract(archive, dest)
        folders[mode] = next(dest.iterdir())
    return folders


@pytest.fixture
def account(db_session) -> Account:
    with transaction(db_session):
        account = Account(email="ada@example.com", password_hash="!", display_name="Ada")
        db_session.add(account)
    return account


def _build(db_session, account, run_folders, blobs, **kwargs):
    runs = [("incident", run_folders["watch:all:1"]), ("baseline", run_folders["baseline"])]
    return service.build_incident(db_session, account, "Slow steps", runs, blobs,
                                  profiles=[REPRO_TINY / "profile.json"], **kwargs)


def test_build_reads_folders_in_place_and_reports_from_the_parsed_runs(db_session, account, run_folders, tmp_path):
    blobs = CountingStore(tmp_path / "blobs")
    with transaction(db_session):
        incident, report = _build(db_session, account, run_folders, blobs)
    assert sorted(link.role for link in incident.evidence) == ["baseline", "incident", "profile"]
    assert incident.log_entry and incident.log_entry == report.log_entry_generated[:5000]
    assert incident.status == "draft" and incident.environment
    assert blobs.reads == []  # the report used the evidence just parsed, not its Parquet copy
    uploads = [k for k in blobs.writes if "/upload" in k]
    assert len(uploads) == 2 and all(k.endswith(".tar.gz") for k in uploads)
    assert len([k for k in blobs.writes if k.endswith(".parquet")]) == 6
    # A stored run reads back from Parquet to the same figures, on a later request.
    again = service.report_input(db_session, incident, blobs, "Ada")
    assert {r.role: r.run.steps for r in again.runs} == {r.role: r.run.steps for r in report.inputs.runs}


def test_same_folder_twice_is_stored_once(db_session, account, run_folders, tmp_path):
    blobs = LocalBlobStore(tmp_path / "blobs")
    with transaction(db_session):
        first, _ = _build(db_session, account, run_folders, blobs)
        second, _ = _build(db_session, account, run_folders, blobs)
    assert db_session.scalar(select(func.count(Evidence.id))) == 2
    assert {link.evidence_id for link in first.evidence} == {link.evidence_id for link in second.evidence}


def test_rollback_removes_the_blobs_written_in_the_transaction(db_session, account, run_folders, tmp_path):
    blobs = LocalBlobStore(tmp_path / "blobs")
    with pytest.raises(RuntimeError), transaction(db_session):
        _build(db_session, account, run_folders, blobs)
        assert any((tmp_path / "blobs").rglob("*.parquet"))
        raise RuntimeError("the caller fails after the build")
    assert db_session.scalar(select(func.count(Evidence.id))) == 0
    assert not [p for p in (tmp_path / "blobs").rglob("*") if p.is_file()]


def test_commit_keeps_blobs_and_a_later_rollback_leaves_them(db_session, account, run_folders, tmp_path):
    blobs = LocalBlobStore(tmp_path / "blobs")
    with transaction(db_session):
        _build(db_session, account, run_folders, blobs)
    kept = sorted(p for p in (tmp_path / "blobs").rglob("*") if p.is_file())
    with pytest.raises(RuntimeError), transaction(db_session):
        _build(db_session, account, run_folders, blobs)  # same content: the stored blobs are reused
        raise RuntimeError("fail")
    assert sorted(p for p in (tmp_path / "blobs").rglob("*") if p.is_file()) == kept


def test_unknown_role_is_refused_before_anything_is_stored(db_session, account, run_folders, tmp_path):
    with pytest.raises(errors.InvalidIncident, match="Role must be one of incident, baseline, fixed"):
        service.build_incident(db_session, account, "x", [("before", run_folders["baseline"])],
                               LocalBlobStore(tmp_path / "blobs"))
    assert not (tmp_path / "blobs").exists()


def test_document_is_rendered_once_per_inputs_and_changes_with_them(db_session, account, run_folders, tmp_path):
    blobs = CountingStore(tmp_path / "blobs")
    with transaction(db_session):
        incident, _ = _build(db_session, account, run_folders, blobs)
    pdf = service.incident_document(db_session, incident, blobs, "pdf")
    assert pdf.startswith(b"%PDF")
    html = service.incident_document(db_session, incident, blobs, "html", pdf_url="/x.pdf").decode()
    assert "Slow steps" in html and 'href="/x.pdf"' in html
    blobs.reads.clear()
    assert service.incident_document(db_session, incident, blobs, "pdf") == pdf
    assert not [k for k in blobs.reads if k.endswith(".parquet")]  # a hit reads the rendered file only
    assert service.incident_document(db_session, incident, blobs, "html", pdf_url="/y.pdf") != html.encode()
    with transaction(db_session):
        service.update_incident(db_session, incident, service.Edits(title="Slow steps, fixed"))
    assert b"Slow steps, fixed" in service.incident_document(db_session, incident, blobs, "html")
