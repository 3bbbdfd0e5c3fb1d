"""The staging step every upload goes through: one hash, one put, the size refused while streaming."""

from __future__ import annotations

import hashlib
import io

import pytest

from hourtab.core.blobs import LocalBlobStore
from hourtab.core.errors import PayloadTooLarge
from hourtab.core.staging import stage_stream


@pytest.mark.parametrize(("limit", "said"), [(512 * 1024, "512 KiB"), (25 << 20, "25 MiB"), (300, "300 bytes")])
def test_an_upload_past_the_limit_is_refused_with_the_limit_as_written_and_nothing_stored(tmp_path, limit, said):
    store = LocalBlobStore(tmp_path / "blobs")
    with pytest.raises(PayloadTooLarge) as refused:
        stage_stream(store, io.BytesIO(b"x" * (limit + 1)), lambda sha: f"uploads/{sha}", max_bytes=limit)
    assert str(refused.value) == f"The upload is larger than the limit of {said}."
    assert [p for p in (tmp_path / "blobs").rglob("*") if p.is_file()] == []


def test_the_same_bytes_are_stored_once_under_their_hash(tmp_path):
    store = LocalBlobStore(tmp_path / "blobs")
    data = b"Project,Duration\nA,01:00:00\n"
    first = stage_stream(store, io.BytesIO(data), lambda sha: f"uploads/{sha}.csv")
    again = stage_stream(store, io.BytesIO(data), lambda sha: f"uploads/{sha}.csv")
    assert first == again and first.sha256 == hashlib.sha256(data).hexdigest() and first.size == len(data)
    assert store.get_bytes(first.key) == data
