"""A tracker's answer as JSON, with its nesting bounded before it is parsed.

Python's parser recurses once per level, so an answer nested 100,000 levels deep would end in a
``RecursionError`` however small it is. Before parsing, every value nested deeper than the limit is
replaced by :data:`TOO_DEEP` (a marker no tracker writes): the rest of the answer is read as usual,
and the entry that held the deep value is skipped and listed as unreadable (:func:`too_deep`), instead
of failing the whole sync.

Depth is measured over the answer's brackets once its strings are blanked out (a bracket inside a
string is text), with numpy over the bytes; the answer itself is then parsed by the standard library.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

#: What a value nested too deep is replaced by.
TOO_DEEP = "\x00hourtab: nested too deep"
_MARKER = json.dumps(TOO_DEEP)
_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.S)


def _depths(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Each character's bracket step (+1 open, -1 close, 0) and the depth after it."""
    blank = _STRING.sub(lambda m: "_" * len(m.group()), text)
    codes = np.frombuffer(blank.encode("ascii", "replace"), dtype=np.uint8)
    opens = (codes == ord("[")) | (codes == ord("{"))
    closes = (codes == ord("]")) | (codes == ord("}"))
    step = opens.astype(np.int32) - closes.astype(np.int32)
    return step, np.cumsum(step)


def bounded(text: str, max_depth: int) -> tuple[str, int]:
    """``text`` with every value deeper than ``max_depth`` replaced by the marker; and how many were."""
    if text.count("[") + text.count("{") <= max_depth:
        return text, 0
    step, depth = _depths(text)
    starts = np.flatnonzero((step == 1) & (depth == max_depth + 1))
    if not len(starts):
        return text, 0
    ends = np.flatnonzero((step == -1) & (depth == max_depth))
    pieces, at = [], 0
    for start in starts:
        if start < at:
            continue
        after = ends[np.searchsorted(ends, start):]
        end = int(after[0]) if len(after) else len(text) - 1
        pieces += [text[at:start], _MARKER]
        at = end + 1
    pieces.append(text[at:])
    return "".join(pieces), len(pieces) // 2


def loads(body: bytes, max_depth: int) -> tuple[Any, bool]:
    """The answer's JSON, and whether some value in it was nested too deep (raises ``ValueError``)."""
    text, cut = bounded(body.decode("utf-8"), max_depth)
    return json.loads(text), bool(cut)


def too_deep(value: Any) -> bool:
    """Whether ``value`` (an entry of an answer that had values cut) holds a cut value."""
    stack = [value]
    while stack:
        item = stack.pop()
        if item == TOO_DEEP:
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False
