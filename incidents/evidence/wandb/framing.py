"""The framing of a ``.wandb`` transaction log: a W&B file header, then LevelDB log blocks.

wandb 0.30 removed its Python reader, so we read the framing ourselves. Layout (checked against
files written by wandb 0.31 and its Go reader ``wandb leet inspect``):

* a 7-byte file header: ``:W&B``, the magic number 0xBEE1 (little-endian), a version byte (0);
* then 32 KiB blocks, counted from the start of the file (the header sits inside block 0);
* each chunk: a 4-byte little-endian checksum, a 2-byte little-endian length, a 1-byte type
  (1 FULL, 2 FIRST, 3 MIDDLE, 4 LAST), then the data; a block's last < 7 bytes are zero padding.

The checksum is **CRC-32 (IEEE, zlib's)** of the type byte followed by the data, unmasked. Stock
LevelDB uses masked CRC-32C here; W&B's writer (wandb-core's leveldb package in its IEEE mode,
kept compatible with the old Python datastore) does not. A file checked with CRC-32C fails on
every chunk, which the tests would show at once.

On damage (bad checksum, impossible length, a chunk out of sequence, or the file ending mid-record)
the reader keeps every record before it, reports the byte offset in ``warnings``, and resumes at
the next block the way LevelDB's own reader does, so one flipped byte costs at most one block.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from hourtab.core import progress
from incidents.errors import InvalidEvidence

FILE_IDENT = b":W&B"
FILE_MAGIC = 0xBEE1
FILE_VERSION = 0
FILE_HEADER = FILE_IDENT + struct.pack("<HB", FILE_MAGIC, FILE_VERSION)
BLOCK_SIZE = 32 * 1024
CHUNK_HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
#: Blocks read per ``read()`` call: large reads, bounded memory (2 MiB).
_BLOCKS_PER_READ = 64
_unpack_header = struct.Struct("<IHB").unpack_from


class FramedFileError(InvalidEvidence):
    """The file is not a W&B transaction log at all (wrong header)."""


def check_header(head: bytes, name: str = "file") -> None:
    """Refuse anything that does not start with the W&B log header, before reading further."""
    if not head:
        raise FramedFileError(f"{name} is empty (0 bytes): there is no W&B record in it to read")
    if len(head) < len(FILE_HEADER) or head[:4] != FILE_IDENT:
        raise FramedFileError(f"{name} is not a W&B transaction log (.wandb): it does not start with ':W&B'")
    magic, version = struct.unpack_from("<HB", head, 4)
    if magic != FILE_MAGIC or version != FILE_VERSION:
        raise FramedFileError(
            f"{name} has an unknown W&B log header (magic {magic:#06x}, version {version}); "
            f"this reader knows magic {FILE_MAGIC:#06x} version {FILE_VERSION}")


@dataclass
class Cursor:
    """Where a resumable read of a growing file stands.

    ``offset`` is the byte just after the last complete record (0: not even the header read yet);
    the next read starts there. ``records`` and ``bytes_read`` count what the latest read covered,
    and ``pending_at`` is where a record still being written starts (None when the file ends cleanly).
    """

    offset: int = 0
    records: int = 0
    bytes_read: int = 0
    pending_at: int | None = None


# Kept whole (113 lines): it is LevelDB's log format as one state machine. The chunk kinds' rules (FULL,
# FIRST, MIDDLE/LAST, damage, the zero-filled block tail) read best side by side, and they share the
# assembly state (pending fragments, where they began, skipping after damage, the cursor, the buffer's
# base) that helpers would have to pass around or hide in an object; it also runs once per record.
def iter_records(source: str | Path | BinaryIO, warnings: list[str],  # noqa: C901
                 cursor: Cursor | None = None) -> Iterator[tuple[int, bytes]]:
    """Yield ``(byte offset, payload)`` for every intact record, in file order.

    Memory stays at a couple of MiB whatever the file size: the file is read a few blocks at a
    time and only the record being assembled is held.

    With a ``cursor`` the read starts at ``cursor.offset`` (from the start of that offset's block,
    so the block arithmetic stays exact) and moves the cursor past each record it yields. A record
    still being written is then not a warning: the cursor stays before it for the next read.
    """
    if isinstance(source, (str, Path)):
        with open(source, "rb") as opened:
            yield from iter_records(opened, warnings, cursor)
        return
    f = source
    size = _size(f)
    start = cursor.offset if cursor is not None else 0
    base = start - start % BLOCK_SIZE   # file offset of data[0]; always a multiple of BLOCK_SIZE
    if base:
        f.seek(base)
    data = f.read(BLOCK_SIZE * _BLOCKS_PER_READ)
    if cursor is not None:
        cursor.records, cursor.bytes_read, cursor.pending_at = 0, len(data), None
    if not start:
        check_header(data, getattr(f, "name", "file"))
    crc32 = zlib.crc32
    unpack = _unpack_header
    pending: list[bytes] = []   # fragments of a record split over blocks
    pending_at = -1             # offset of its first chunk
    skipping = False            # after damage: drop chunks until the next FIRST/FULL
    # the file header occupies the first 7 bytes of block 0
    pos = start - base if start else CHUNK_HEADER
    while data:
        end = len(data)
        while True:
            block_left = BLOCK_SIZE - (pos % BLOCK_SIZE)
            if block_left < CHUNK_HEADER:
                pos += block_left          # zero trailer at the end of a block
                continue
            if pos + CHUNK_HEADER > end:
                break
            checksum, length, kind = unpack(data, pos)
            start = pos + CHUNK_HEADER
            stop = start + length
            if checksum == 0 and length == 0 and kind == 0:
                pos += block_left          # zero-filled rest of a block (preallocated or padded)
                continue
            if length > block_left - CHUNK_HEADER:
                warnings.append(_damage(base + pos, "a chunk length that runs past its block"))
                pending, skipping = [], True
                pos += block_left
                continue
            if stop > end:
                break                      # the chunk continues past what we have read
            payload = data[start:stop]
            if crc32(payload, crc32(bytes((kind,)))) != checksum:
                warnings.append(_damage(base + pos, "a checksum mismatch"))
                pending, skipping = [], True
                pos += block_left
                continue
            chunk_at, pos = pos, stop
            if kind == FULL:
                if pending:
                    warnings.append(_damage(pending_at, "a record whose last chunk is missing"))
                    pending = []
                skipping = False
                if cursor is not None:
                    cursor.offset, cursor.records = base + pos, cursor.records + 1
                yield base + chunk_at, payload
            elif kind == FIRST:
                if pending:
                    warnings.append(_damage(pending_at, "a record whose last chunk is missing"))
                skipping = False
                pending, pending_at = [payload], base + chunk_at
            elif kind in (MIDDLE, LAST):
                if skipping:
                    continue
                if not pending:
                    warnings.append(_damage(base + chunk_at, "a chunk without its first part"))
                    skipping = True
                    continue
                pending.append(payload)
                if kind == LAST:
                    record, pending = b"".join(pending), []
                    if cursor is not None:
                        cursor.offset, cursor.records = base + pos, cursor.records + 1
                    yield pending_at, record
            else:
                warnings.append(_damage(base + chunk_at, f"an unknown chunk type {kind}"))
                pending, skipping = [], True
                pos = chunk_at + block_left
        # Keep the unread tail (a partial chunk), aligned so block arithmetic stays exact.
        keep_from = pos - (pos % BLOCK_SIZE)
        progress.report("Reading records", base + end, size)
        more = f.read(BLOCK_SIZE * _BLOCKS_PER_READ)
        if cursor is not None:
            cursor.bytes_read += len(more)
        if not more:
            if pending or (pos < end and any(data[pos:end])):
                at = pending_at if pending else base + pos
                if cursor is not None:
                    cursor.pending_at = at
                    return
                warnings.append(
                    f"the file ends in the middle of a record at byte {at} "
                    f"(truncated, or still being written); records before it were read")
            return
        if keep_from > len(data):           # only after a short read: drop the bytes skipped over
            more = more[keep_from - len(data):]
        data = data[keep_from:] + more
        base += keep_from
        pos -= keep_from


def _size(f: BinaryIO) -> int:
    """The file's size for progress reports (0 when it is a stream without one)."""
    try:
        return os.fstat(f.fileno()).st_size
    except (AttributeError, OSError, ValueError):
        return 0


def _damage(offset: int, what: str) -> str:
    return (f"damaged record at byte {offset} ({what}); records before it were read, "
            f"reading resumed at the next 32 KiB block")


def write_records(f: BinaryIO, payloads: Iterator[bytes]) -> int:
    """Write records in the SDK's framing (the trimming tool, the benchmark and tests build files with it).

    Returns the number of bytes written. Mirrors LevelDB's writer: records are split at block
    boundaries into FIRST/MIDDLE/LAST chunks; fewer than 7 bytes left in a block become zeros.
    """
    out = bytearray(FILE_HEADER)
    crc32 = zlib.crc32
    type_crc = {k: crc32(bytes((k,))) for k in (FULL, FIRST, MIDDLE, LAST)}
    written = 0
    for payload in payloads:
        view = memoryview(payload)
        first = True
        while True:
            left = BLOCK_SIZE - ((written + len(out)) % BLOCK_SIZE)
            if left < CHUNK_HEADER:
                out += b"\0" * left
                continue
            room = left - CHUNK_HEADER
            piece = view[:room]
            view = view[room:]
            last = len(view) == 0
            kind = FULL if first and last else FIRST if first else LAST if last else MIDDLE
            out += struct.pack("<IHB", crc32(piece, type_crc[kind]), len(piece), kind)
            out += piece
            first = False
            if last:
                break
        if len(out) >= 1 << 20:
            f.write(out)
            written += len(out)
            out = bytearray()
    f.write(out)
    return written + len(out)
