"""One staging step for every upload: stream it into the blob store, hashing and counting as it goes.

A CSV export and an evidence archive arrive the same way (a file object from the request, the CLI
or a job). Each is read once, in chunks: the size is checked against the limit while reading, so an
oversized file is refused at the first chunk past the limit and nothing of it is stored; the
sha256 is computed from the same chunks; and the bytes are put once, under a key derived from that
hash (uploads are content-addressed, so the same file uploaded twice is stored once).
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from hourtab.core.blobs import BlobStore
from hourtab.core.errors import PayloadTooLarge

CHUNK = 1 << 20
#: Uploads up to this size are spooled in memory on their way to the store, larger ones on disk.
SPOOL_BYTES = 8 << 20


@dataclass(frozen=True)
class Staged:
    key: str
    sha256: str
    size: int


def stage_stream(store: BlobStore, stream: IO[bytes], key_for: Callable[[str], str], *,
                 max_bytes: int | None = None,
                 too_large: Callable[[int, int], Exception] | None = None) -> Staged:
    """Read ``stream`` to its end into ``store`` under ``key_for(sha256)``; one hash, one put.

    Past ``max_bytes`` it raises ``too_large(bytes read so far, max_bytes)`` before anything is
    put. A key that exists already (the same bytes, uploaded before) is not written again.
    """
    digest, size = hashlib.sha256(), 0
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
        while chunk := stream.read(CHUNK):
            size += len(chunk)
            if max_bytes is not None and size > max_bytes:
                raise (too_large or _too_large)(size, max_bytes)
            digest.update(chunk)
            spool.write(chunk)
        sha = digest.hexdigest()
        key = key_for(sha)
        if not store.exists(key):
            spool.seek(0)
            store.put_stream(key, spool)
    return Staged(key=key, sha256=sha, size=size)


def read_limited(stream: IO[bytes], max_bytes: int | None,
                 too_large: Callable[[int, int], Exception] | None = None) -> bytes:
    """The stream's bytes, for work that stores nothing (a dry run); the same check as ``stage_stream``."""
    chunks, size = [], 0
    while chunk := stream.read(CHUNK):
        size += len(chunk)
        if max_bytes is not None and size > max_bytes:
            raise (too_large or _too_large)(size, max_bytes)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(size: int, limit: int) -> Exception:
    return PayloadTooLarge(f"The upload is larger than the limit of {_size(limit)}.")


def _size(n: int) -> str:
    """``25 MiB``, ``512 KiB``, ``300 bytes``: the limit as a person would write it, never "0 MiB"."""
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"
