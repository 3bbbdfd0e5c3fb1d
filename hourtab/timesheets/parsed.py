"""A staged upload's parsed entries, kept beside its bytes so the preview and the confirm read them.

``read_timesheet`` is a pure function of the bytes and a few parameters (format, date order, time
zone, column mapping, duration unit). Its result, the entries frame and the read report, is stored
as one Arrow IPC blob next to the raw file, under a key made of those parameters: the preview and
the confirm load it instead of parsing again, and a changed option (another zone, a date order)
names another blob, parsed once when the option is chosen. Arrow keeps every column's type exactly
(seconds-resolution dates, nullable booleans, strings), so a loaded frame equals the parsed one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any, Protocol

import pandas as pd
import pyarrow as pa

from hourtab.core.blobs import BlobStore
from hourtab.timesheets.errors import RowIssue
from hourtab.timesheets.reader import export_format, read_timesheet
from hourtab.timesheets.report import ReadReport

#: Part of every parsed blob's key: raise it when the reader's output changes, so no stale parse is read.
READER_VERSION = 1
_REPORT = b"hourtab.report"


def parsed_key(raw_key: str, params: dict[str, Any]) -> str:
    """The blob beside ``raw_key`` that holds the file parsed with ``params``."""
    digest = hashlib.sha256(json.dumps([READER_VERSION, params], sort_keys=True).encode()).hexdigest()[:32]
    return f"{raw_key.rsplit('/', 1)[0]}/parsed-{digest}.arrow"


def dump(frame: pd.DataFrame, report: ReadReport) -> bytes:
    table = pa.Table.from_pandas(frame, preserve_index=False)
    meta = {**(table.schema.metadata or {}), _REPORT: json.dumps(dataclasses.asdict(report)).encode()}
    table = table.replace_schema_metadata(meta)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def load(data: bytes) -> tuple[pd.DataFrame, ReadReport]:
    table = pa.ipc.open_file(pa.BufferReader(data)).read_all()
    fields = json.loads(table.schema.metadata[_REPORT])
    fields["errors"] = [RowIssue(**e) for e in fields["errors"]]
    return table.to_pandas(), ReadReport(**fields)


class Source(Protocol):
    def read(self, **params: Any) -> tuple[pd.DataFrame, ReadReport]: ...

    def export_format(self, **params: Any) -> str | None:
        """The format the file will read as, from its header; ``None``: known once read."""


class BytesSource:
    """A file in memory (a dry run, an import without a blob store): parsed on every read."""

    def __init__(self, data: bytes, max_bytes: int | None = None) -> None:
        self.data = data
        self.max_bytes = max_bytes

    def read(self, **params: Any) -> tuple[pd.DataFrame, ReadReport]:
        return read_timesheet(self.data, max_bytes=self.max_bytes, **params)

    def export_format(self, **params: Any) -> str:
        return export_format(self.data, **params)


class StagedSource:
    """A staged upload: its parse with the same parameters is loaded, else parsed (and kept, with ``keep``).

    ``keep`` is False for the preview, a GET that writes nothing; the POSTs that stage a file or
    change its options parse and keep, so the preview finds their parse. ``parses`` counts the
    parses this source ran (the rest were loaded).
    """

    def __init__(self, store: BlobStore, raw_key: str, keep: bool) -> None:
        self.store = store
        self.raw_key = raw_key
        self.keep = keep
        self.parses = 0
        self._raw: bytes | None = None

    def read(self, **params: Any) -> tuple[pd.DataFrame, ReadReport]:
        key = parsed_key(self.raw_key, params)
        if self.store.exists(key):
            return load(self.store.get_bytes(key))
        if self._raw is None:
            self._raw = self.store.get_bytes(self.raw_key)
        # The size was checked once, while the file streamed in (``hourtab.core.staging``).
        frame, report = read_timesheet(self._raw, max_bytes=None, **params)
        self.parses += 1
        if self.keep:  # a derived file: valid whatever becomes of the transaction, so the plain store
            self.store.put_bytes(key, dump(frame, report))
        return frame, report

    def export_format(self, **params: Any) -> str | None:
        """Unknown before a read: its parses are kept, so a read in a second zone is a load, and a
        staged file's preview and confirm never read the file itself again."""
        return None
