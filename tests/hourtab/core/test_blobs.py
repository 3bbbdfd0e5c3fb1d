"""Blob storage: the local folder and a real S3-compatible server (moto's, on loopback)."""

from __future__ import annotations

import uuid

import pytest

from hourtab.core.blobs import LocalBlobStore, S3BlobStore, blob_store
from hourtab.core.errors import InvalidInput, NotFound
from tests.helpers.servers import free_port


@pytest.fixture(scope="module")
def s3_endpoint():
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3_store(s3_endpoint, monkeypatch):
    import boto3

    for name, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    # moto keeps its buckets per process, so other tests in this worker may have filled "hourtab-test".
    bucket = f"hourtab-blobs-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_endpoint).create_bucket(Bucket=bucket)
    store = blob_store("/nonexistent", f"s3://{bucket}/some/prefix", s3_endpoint)
    assert isinstance(store, S3BlobStore)
    return store


def _exercise(store, tmp_path) -> None:
    src = tmp_path / "upload.bin"
    src.write_bytes(b"\x00\x01" * 300_000)
    store.put_file("evidence/1/abc/upload.zip", src)
    store.put_bytes("evidence/1/abc/history.parquet", b"PAR1")
    assert store.get_bytes("evidence/1/abc/upload.zip") == src.read_bytes()
    assert store.exists("evidence/1/abc/history.parquet")
    store.delete("evidence/1/abc/history.parquet")
    assert not store.exists("evidence/1/abc/history.parquet")
    with pytest.raises(NotFound):
        store.get_bytes("evidence/1/abc/history.parquet")
    for bad in ("../x", "/etc/passwd", "a/../../b", "a//b", ""):
        with pytest.raises(InvalidInput):
            store.put_bytes(bad, b"x")


def test_local_store(tmp_path):
    store = blob_store(tmp_path / "data")
    assert isinstance(store, LocalBlobStore) and store.root == tmp_path / "data" / "blobs"
    _exercise(store, tmp_path)
    assert not list((tmp_path / "data").rglob(".tmp-*"))


def test_s3_store_against_moto_server(s3_store, s3_endpoint, tmp_path):
    import boto3

    _exercise(s3_store, tmp_path)
    keys = [o["Key"] for o in boto3.client("s3", endpoint_url=s3_endpoint)
            .list_objects_v2(Bucket=s3_store.bucket).get("Contents", [])]
    assert keys == ["some/prefix/evidence/1/abc/upload.zip"]


def test_bad_blob_url_is_refused():
    with pytest.raises(InvalidInput):
        blob_store("/tmp", "ftp://host/x")


def test_joined_writes_follow_the_transaction(db_session, tmp_path):
    from hourtab.core.blobs import joined
    from hourtab.core.db import transaction

    plain = LocalBlobStore(tmp_path)
    plain.put_bytes("shared/kept.bin", b"committed earlier")
    with pytest.raises(RuntimeError), transaction(db_session):
        store = joined(db_session, plain)
        store.put_bytes("new/a.bin", b"a")
        store.put_bytes("shared/kept.bin", b"committed earlier")  # same content-addressed key
        raise RuntimeError("roll back")
    assert not plain.exists("new/a.bin")
    assert plain.get_bytes("shared/kept.bin") == b"committed earlier"
    with transaction(db_session):
        joined(db_session, plain).put_bytes("new/b.bin", b"b")
    db_session.rollback()  # a later rollback leaves what an earlier commit kept
    assert plain.get_bytes("new/b.bin") == b"b"


def test_a_joined_store_streams_and_reads_back_like_the_plain_one(db_session, tmp_path):
    """Every ``BlobStore`` method works through ``joined``; a streamed write rolls back too."""
    import io

    from hourtab.core.blobs import joined
    from hourtab.core.db import transaction

    plain = LocalBlobStore(tmp_path / "store")
    with pytest.raises(RuntimeError), transaction(db_session):
        joined(db_session, plain).put_stream("new/streamed.bin", io.BytesIO(b"streamed"))
        raise RuntimeError("roll back")
    assert not plain.exists("new/streamed.bin")
    with transaction(db_session):
        store = joined(db_session, plain)
        store.put_stream("new/streamed.bin", io.BytesIO(b"streamed"))
        store.get_file("new/streamed.bin", tmp_path / "copy.bin")
    assert (tmp_path / "copy.bin").read_bytes() == b"streamed"
