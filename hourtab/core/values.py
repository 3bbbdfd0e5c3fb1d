"""Values as we accept them from people and files: text XML can carry, dates and amounts in sane
ranges, JSON that does not nest deeper than anything we read.

Text: names, descriptions and run names end up in the Atom feed, in HTML, in PDFs and in JSON.
XML 1.0 cannot carry C0 control characters (other than tab, newline and carriage return), U+FFFE,
U+FFFF or lone surrogates at all, not even escaped, so one such character in a retainer name would
make the client's feed unreadable. They carry no meaning in a name, so they are removed on input,
once, rather than escaped on every way out.

Dates and amounts: a retainer starting on 9999-12-31 is not a plan anybody has; accepted, it made
period arithmetic overflow on every page that showed the retainer. Dates outside 2000–2100 and
amounts beyond any real retainer are refused with a message naming the field.

JSON: ``json.loads("[" * 200000 + "]" * 200000)`` raises ``RecursionError`` deep inside the
standard library, and a document just under the interpreter's limit still sinks any code that walks
it. Nothing we read (profiles, W&B exports, W&B record values) nests more than a few levels, so
documents deeper than ``MAX_JSON_DEPTH`` are refused with ``TooDeep`` before they are parsed. The
depth is measured without recursion and without a Python loop over the text: escapes are removed,
everything but quotes and brackets is dropped, and numpy counts what is left.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal
from typing import Any

import numpy as np

from hourtab.core.errors import InvalidInput

# Text

#: What XML 1.0's ``Char`` production excludes, as a Python pattern.
XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
#: The same set for pyarrow's RE2 (UTF-8 text cannot hold surrogates).
XML_FORBIDDEN_RE2 = r"[\x{0}-\x{8}\x{B}\x{C}\x{E}-\x{1F}\x{FFFE}\x{FFFF}]"


def xml_safe(text: str | None) -> str:
    """``text`` without the characters XML 1.0 forbids (``None`` becomes ``""``)."""
    return XML_FORBIDDEN.sub("", text or "")


#: Controls a one-line name has no use for: C0 and C1 controls, DEL, and the bidirectional
#: embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069) that can make a name in a
#: ``From:`` line read as something else. Whitespace among them becomes a space first.
_LINE_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ufffe\uffff\ud800-\udfff]")


def single_line(text: str | None) -> str:
    """A name as every way out can carry it: one line, no control characters, single spaces.

    Display names go to the Atom feed (XML), PDFs and e-mail headers, where a line break or a
    control byte either breaks the document or reaches the reader's mail client.
    """
    return " ".join(_LINE_CONTROLS.sub("", " ".join((text or "").split())).split())


# Dates and amounts

EARLIEST = dt.date(2000, 1, 1)
LATEST = dt.date(2100, 12, 31)
#: More hours than any retainer, top-up or cap could hold (a century of days).
MAX_HOURS = Decimal(1_000_000)
MAX_RATE = Decimal(1_000_000_000)


def check_date(value: dt.date | dt.datetime | None, what: str) -> None:
    """Refuse dates outside 2000–2100; ``what`` names the field in the message."""
    if value is None:
        return
    day = value.date() if isinstance(value, dt.datetime) else value
    if not EARLIEST <= day <= LATEST:
        raise InvalidInput(f"{what[:1].upper()}{what[1:]} must be between {EARLIEST} and {LATEST}, "
                           f"not {day.isoformat()}.")


# JSON

MAX_JSON_DEPTH = 64


class TooDeep(Exception):
    """A JSON document nests deeper than the limit; deliberately not a ``ValueError``, so code that
    skips malformed values cannot quietly skip this one."""

    def __init__(self, depth: int, limit: int) -> None:
        super().__init__(f"JSON nested {depth:,} levels deep (at most {limit} are accepted)")
        self.depth = depth
        self.limit = limit


def nesting_depth(text: str | bytes) -> int:
    """The deepest bracket nesting outside strings (for well-formed JSON, its nesting depth)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    if data.count(b"[") + data.count(b"{") <= 1:
        return int(b"[" in data or b"{" in data)
    # Escaped backslashes go first, then escaped quotes; only real string delimiters remain.
    data = data.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_STRUCTURE)
    b = np.frombuffer(data, dtype=np.uint8)
    outside = np.cumsum(b == ord('"')) % 2 == 0
    steps = np.zeros(b.size, dtype=np.int8)
    steps[((b == ord("[")) | (b == ord("{"))) & outside] = 1
    steps[((b == ord("]")) | (b == ord("}"))) & outside] = -1
    return int(np.cumsum(steps, dtype=np.int64).max())


_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'"[]{}')


def check_json_depth(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> None:
    depth = nesting_depth(text)
    if depth > limit:
        raise TooDeep(depth, limit)


def json_loads(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` that raises ``TooDeep`` instead of recursing past ``limit``."""
    check_json_depth(text, limit)
    return json.loads(text)
