"""JSON parsing that refuses deep nesting before Python's parser recurses into it.

``json.loads("[" * 200000 + "]" * 200000)`` raises ``RecursionError`` deep inside the standard
library, and a document just under the interpreter's limit still sinks any code that walks it.
Nothing we read (profiles, W&B exports, W&B record values) nests more than a few levels, so
documents deeper than ``MAX_DEPTH`` are refused with ``TooDeep`` before they are parsed. The
depth is measured without recursion and without a Python loop over the text: escapes are
removed, everything but quotes and brackets is dropped, and numpy counts what is left.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

MAX_DEPTH = 64


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


def check_depth(text: str | bytes, limit: int = MAX_DEPTH) -> None:
    depth = nesting_depth(text)
    if depth > limit:
        raise TooDeep(depth, limit)


def loads(text: str | bytes, limit: int = MAX_DEPTH) -> Any:
    """``json.loads`` that raises ``TooDeep`` instead of recursing past ``limit``."""
    check_depth(text, limit)
    return json.loads(text)
