"""Bytes to UTF-8: BOMs, UTF-16 from Excel's "Unicode text", Windows-1252, and refusing binaries.

The CSV parser works on UTF-8 bytes, so this module's one job is to hand it those (and the name
of the encoding it found). UTF-8 is tried strictly first because it is by far the most common and
the cheapest to confirm; charset-normalizer is asked only when that fails, because guessing on
every file would cost more than parsing it.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

import charset_normalizer
import numpy as np
import pyarrow as pa

from hourtab.timesheets.errors import UnreadableFile

_MAGIC = (
    (b"%PDF", "This is a PDF file, not a CSV. Export the report from your time tracker as CSV."),
    (b"PK\x03\x04", "This is a ZIP or Excel (.xlsx) file, not a CSV. Save or export it as CSV."),
    (b"\xd0\xcf\x11\xe0", "This is an old Excel (.xls) file, not a CSV. Save or export it as CSV."),
    (b"\x89PNG", "This is an image, not a CSV."),
    (b"\xff\xd8\xff", "This is an image, not a CSV."),
    (b"\x1f\x8b", "This is a gzip archive; unpack it first."),
)
#: Control characters that never occur in a text export (tab, CR and LF are fine).
_CONTROL = bytes(i for i in range(32) if i not in (9, 10, 13)) + b"\x7f"
_ALLOWED = bytes(i for i in range(256) if bytes([i]) not in _CONTROL)


@dataclass(frozen=True)
class Decoded:
    encoding: str
    utf8: bytes

    def head(self, size: int = 65536) -> str:
        """The start of the text, for sniffing the header and delimiter."""
        return self.utf8[:size].decode("utf-8", "ignore")


def to_utf8(data: bytes) -> Decoded:
    """Decode ``data`` (any common export encoding) and return it as UTF-8 without a BOM."""
    if not data or data.isspace():  # what ``not data.strip()`` says, without copying the file
        raise UnreadableFile("The file is empty.")
    for magic, message in _MAGIC:
        if data.startswith(magic):
            raise UnreadableFile(message)
    encoding, text = _decode(data)
    utf8 = data if text is None else text.encode("utf-8")
    if encoding == "utf-8-sig":
        utf8 = utf8[len(codecs.BOM_UTF8):] if text is None else utf8
    _refuse_binary(utf8)
    return Decoded(encoding=encoding, utf8=utf8)


def _decode(data: bytes) -> tuple[str, str | None]:
    """(encoding, text); text is None when ``data`` is already valid UTF-8 (no copy needed)."""
    if data.startswith(codecs.BOM_UTF8):
        if not _is_utf8(data, 3):
            try:
                codecs.decode(data[3:], "utf-8")
            except UnicodeDecodeError as e:
                raise UnreadableFile(f"The file starts like UTF-8 but has invalid bytes at offset {e.start + 3}.") from e
        return "utf-8-sig", None
    for bom, name in ((codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")):
        if data.startswith(bom):
            return "utf-16", _strict(data[2:], name)
    sniff = data[:4096]
    if len(sniff) >= 4 and sniff.count(b"\x00") > len(sniff) // 4:
        odd_nuls = sniff[1::2].count(b"\x00")
        even_nuls = sniff[0::2].count(b"\x00")
        name = "utf-16-le" if odd_nuls > even_nuls else "utf-16-be"
        return "utf-16", _strict(data, name)
    if _is_utf8(data):
        return "utf-8", None
    matches = charset_normalizer.from_bytes(data[:262144])
    best = matches.best()
    if best is None:
        raise UnreadableFile("The file is not text (no character encoding fits it). Export the report as CSV.")
    name = codecs.lookup(best.encoding).name
    # Short Western-European files often fit cp1250 and cp1252 equally well; Excel on a Western
    # Windows writes cp1252, so a tie goes to it (cp1250 would turn "è" into "č").
    if any(m.encoding == "cp1252" and m.chaos <= best.chaos for m in matches) or (
            name == "cp1250" and _decodes(data, "cp1252")
            and data.decode("cp1252") == data.decode("cp1250", "replace")):
        name = "cp1252"
    return name, _strict(data, name)


def _is_utf8(data: bytes, start: int = 0) -> bool:
    """Strict UTF-8 check by pyarrow's validator: no decoded copy (Python's decode built a str
    as large as the file only to be thrown away). Python's codec is still what names the offset
    of a bad byte, so the messages do not change."""
    offsets = pa.py_buffer(np.array([0, len(data) - start], np.int64).tobytes())
    cells = pa.Array.from_buffers(pa.large_binary(), 1, [None, offsets, pa.py_buffer(data).slice(start)])
    try:
        cells.cast(pa.large_string())
    except pa.ArrowInvalid:
        return False
    return True


def _decodes(data: bytes, encoding: str) -> bool:
    try:
        data.decode(encoding)
    except UnicodeDecodeError:
        return False
    return True


def _strict(data: bytes, encoding: str) -> str:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        raise UnreadableFile(f"The file looks like {encoding} but has invalid bytes at offset {e.start}.") from e


def _refuse_binary(utf8: bytes) -> None:
    sample = utf8[:65536]
    junk = len(sample.translate(None, _ALLOWED))
    if b"\x00" in utf8 or junk > max(2, len(sample) // 100):
        raise UnreadableFile("The file contains binary data, not CSV text. Export the report as CSV.")
