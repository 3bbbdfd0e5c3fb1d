"""Where uploads and rendered files live: a local folder by default, an S3-compatible bucket if set.

One small interface so services never care which: ``put_file``, ``put_bytes``, ``get_bytes``,
``exists``, ``delete``; ``joined`` ties a store's writes to a session's transaction. Keys are relative POSIX paths (``evidence/12/<sha256>/upload.zip``) that we
build ourselves; they are still validated, so a key can never name a file outside the store.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Protocol
from urllib.parse import urlparse

from botocore.exceptions import ClientError
from sqlalchemy import event
from sqlalchemy.orm import Session

from hourtab.core.errors import InvalidInput, NotFound

_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*$")


class BlobStore(Protocol):
    def put_file(self, key: str, path: Path) -> None: ...
    def put_bytes(self, key: str, data: bytes) -> None: ...
    def put_stream(self, key: str, stream: IO[bytes]) -> None: ...
    def get_bytes(self, key: str) -> bytes: ...
    def get_file(self, key: str, path: Path) -> None: ...
    def exists(self, key: str) -> bool: ...
    def delete(self, key: str) -> None: ...


def check_key(key: str) -> str:
    if not _KEY.match(key) or ".." in key.split("/"):
        raise InvalidInput(f"invalid blob key {key!r}")
    return key


class LocalBlobStore:
    """Files under one root folder, written atomically (temp file + rename)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    def _write(self, key: str, write: Callable[[IO[bytes]], object]) -> None:
        target = self._path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                write(f)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def put_file(self, key: str, path: Path) -> None:
        def copy(f: IO[bytes]) -> None:
            with open(path, "rb") as src:
                while chunk := src.read(1 << 20):
                    f.write(chunk)

        self._write(key, copy)

    def put_bytes(self, key: str, data: bytes) -> None:
        self._write(key, lambda f: f.write(data))

    def put_stream(self, key: str, stream: IO[bytes]) -> None:
        """Store what is left to read in a binary file object."""
        self._write(key, lambda f: shutil.copyfileobj(stream, f, 1 << 20))

    def get_bytes(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError as e:
            raise NotFound(f"blob {key} not found") from e

    def get_file(self, key: str, path: Path) -> None:
        """Copy the blob to ``path`` (streamed: large uploads never sit in memory)."""
        try:
            shutil.copyfile(self._path(key), path)
        except FileNotFoundError as e:
            raise NotFound(f"blob {key} not found") from e

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)


class S3BlobStore:
    """Objects under ``prefix`` in one bucket of any S3-compatible service (boto3)."""

    def __init__(self, bucket: str, prefix: str = "", endpoint_url: str | None = None,
                 client: Any = None) -> None:
        import boto3  # noqa: PLC0415 -- 0.6 s to import, and only an S3 store needs it

        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.client = client or boto3.client("s3", endpoint_url=endpoint_url or None)

    def _key(self, key: str) -> str:
        check_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def put_file(self, key: str, path: Path) -> None:
        self.client.upload_file(str(path), self.bucket, self._key(key))

    def put_bytes(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data)

    def put_stream(self, key: str, stream: IO[bytes]) -> None:
        self.client.upload_fileobj(stream, self.bucket, self._key(key))

    def get_bytes(self, key: str) -> bytes:
        try:
            return self.client.get_object(Bucket=self.bucket, Key=self._key(key))["Body"].read()
        except ClientError as e:
            if _error_code(e) in ("NoSuchKey", "404"):
                raise NotFound(f"blob {key} not found") from e
            raise

    def get_file(self, key: str, path: Path) -> None:
        try:
            self.client.download_file(self.bucket, self._key(key), str(path))
        except ClientError as e:
            if _error_code(e) in ("NoSuchKey", "404"):
                raise NotFound(f"blob {key} not found") from e
            raise

    def exists(self, key: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=self._key(key))
            return True
        except ClientError as e:
            if _error_code(e) in ("NoSuchKey", "404", "NotFound"):
                return False
            raise

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(key))


def _error_code(e: ClientError) -> str | None:
    return e.response.get("Error", {}).get("Code")


def blob_store(data_dir: Path | str, url: str = "", endpoint_url: str = "") -> BlobStore:
    """The configured store: ``s3://bucket/prefix`` → S3, empty → ``<data dir>/blobs``."""
    if not url:
        return LocalBlobStore(Path(data_dir) / "blobs")
    parsed = urlparse(url)
    if parsed.scheme == "s3" and parsed.netloc:
        return S3BlobStore(parsed.netloc, parsed.path, endpoint_url or None)
    if parsed.scheme in ("", "file"):
        return LocalBlobStore(Path(parsed.path or url))
    raise InvalidInput(f"HOURTAB_BLOB_URL must be s3://bucket/prefix or a folder, not {url!r}")


_WRITTEN = "hourtab.blobs_written"


class UnitOfWorkBlobs:
    """A store whose writes join a session's transaction: a rollback deletes the blobs it wrote.

    Only blobs that did not exist before are removed, because keys are content-addressed and an
    earlier, committed upload may own the same key. Derived files (rendered caches) should be
    written to the plain store instead: they stay valid whatever happens to the transaction.
    """

    def __init__(self, session: Session, store: BlobStore) -> None:
        self.session = session
        self.store = store
        if _WRITTEN not in session.info:
            session.info[_WRITTEN] = []
            event.listen(session, "after_commit", _forget)
            event.listen(session, "after_rollback", _remove_written)

    def _track(self, key: str) -> None:
        self.session.connection()  # a database transaction to follow, even before any SQL ran
        if not self.store.exists(key):
            self.session.info[_WRITTEN].append((self.store, key))

    def put_file(self, key: str, path: Path) -> None:
        self._track(key)
        self.store.put_file(key, path)

    def put_bytes(self, key: str, data: bytes) -> None:
        self._track(key)
        self.store.put_bytes(key, data)

    def put_stream(self, key: str, stream: IO[bytes]) -> None:
        self._track(key)
        self.store.put_stream(key, stream)

    def get_bytes(self, key: str) -> bytes:
        return self.store.get_bytes(key)

    def get_file(self, key: str, path: Path) -> None:
        self.store.get_file(key, path)

    def exists(self, key: str) -> bool:
        return self.store.exists(key)

    def delete(self, key: str) -> None:
        self.store.delete(key)


def joined(session: Session, store: BlobStore) -> BlobStore:
    """``store`` with its writes joined to ``session``'s unit of work (see ``UnitOfWorkBlobs``)."""
    return store if isinstance(store, UnitOfWorkBlobs) else UnitOfWorkBlobs(session, store)


def _forget(session: Session) -> None:
    session.info[_WRITTEN].clear()


def _remove_written(session: Session) -> None:
    written = session.info[_WRITTEN]
    while written:
        store, key = written.pop()
        store.delete(key)
