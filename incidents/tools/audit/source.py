"""Reading a script for the audit, and refusing what no training script is.

The audit reads untrusted files in CI, so a file is refused (``ScriptUnreadable``, exit 2, one line)
before it can cost the machine: over ``max_bytes`` (checked before reading; an 18 MB file once took
6.7 GB and two minutes), not UTF-8, not parseable — including what makes Python's own parser give up
(expressions nested too deep, recursion or memory exhausted) — nested deeper than any real program
(the walk that follows recurses), or holding an integer literal longer than any size or frequency.
"""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

from incidents.errors import InvalidEvidence

#: Default size limit: four times the largest module in transformers (280 KB); ``--max-bytes`` raises it.
MAX_BYTES = 1024 * 1024
#: Syntax-tree depth limit; transformers' deepest module is 28 levels deep.
MAX_DEPTH = 100
#: An integer literal longer than this is no model size or step count.
MAX_INT_DIGITS = 100


#: Python's own line breaks (``str.splitlines`` also splits on form feeds and others the tokenizer keeps).
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def source_lines(text: str) -> list[str]:
    """The script's lines, numbered as the syntax tree numbers them, without their line breaks."""
    return [line.rstrip("\r\n") for line in _LINES.findall(text)]


class Segments:
    """The source text of a node, from lines split once (``ast.get_source_segment`` splits the whole file
    on every call, which made a large script take minutes)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def __call__(self, node: ast.expr | ast.stmt) -> str:
        start, end = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        first_col, last_col = node.col_offset, node.end_col_offset
        if end >= len(self.lines) or last_col is None:
            return ast.unparse(node)
        if start == end:
            return self.lines[start].encode()[first_col:last_col].decode(errors="replace")
        first = self.lines[start].encode()[first_col:].decode(errors="replace")
        last = self.lines[end].encode()[:last_col].decode(errors="replace")
        return "\n".join([first, *self.lines[start + 1: end], last])


class ScriptUnreadable(InvalidEvidence):
    """A script the audit refuses to read; the message names the line and column when there is one."""


def read_source(path: Path, max_bytes: int = MAX_BYTES) -> tuple[str, ast.Module]:
    """The text and syntax tree of ``path``, or :class:`ScriptUnreadable` saying why not."""
    name = path.name
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise ScriptUnreadable(f"{name}: not a regular file.")
        if size > max_bytes:
            raise ScriptUnreadable(f"{name}: {size:,} bytes, over the audit's limit of {max_bytes:,} "
                                   "(raise it with --max-bytes).")
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except FileNotFoundError as e:
        raise ScriptUnreadable(f"{name}: no such file.") from e
    except OSError as e:
        raise ScriptUnreadable(f"{name}: cannot be read ({e.strerror or type(e).__name__}).") from e
    if len(data) > max_bytes:  # grew while we looked
        raise ScriptUnreadable(f"{name}: over the audit's limit of {max_bytes:,} bytes (raise it with --max-bytes).")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ScriptUnreadable(f"{name}: cannot be read as UTF-8 text (byte {e.start:,}).") from e
    return text, parse_script(text, name)


def parse_script(text: str, name: str) -> ast.Module:
    """``ast.parse`` with every way it gives up turned into one refusal line."""
    try:
        tree = ast.parse(text, filename=name)
    except SyntaxError as e:
        where = f"{name}:{e.lineno}:{e.offset}" if e.lineno else name
        message = (e.msg or "invalid syntax").split(";")[0].rstrip(".")
        raise ScriptUnreadable(f"{where}: does not parse: {message}.") from e
    except ValueError as e:  # null bytes
        raise ScriptUnreadable(f"{name}: does not parse: {str(e).rstrip('.')}.") from e
    except RecursionError as e:
        raise ScriptUnreadable(f"{name}: does not parse: expressions nested too deep for Python's parser.") from e
    except MemoryError as e:
        raise ScriptUnreadable(f"{name}: does not parse: Python's parser ran out of memory on it.") from e
    _check_shape(tree, name)
    return tree


def _digits(value: int) -> int:
    """Decimal digits of ``value`` ≥ 0 without ``str()`` (which refuses past 4,300 digits)."""
    digits = math.floor((max(value.bit_length(), 1) - 1) * math.log10(2)) + 1
    return digits + 1 if value >= 10**digits else digits


def _check_shape(tree: ast.Module, name: str) -> None:
    """Refuse trees deeper than ``MAX_DEPTH`` and integers longer than ``MAX_INT_DIGITS`` (iteratively)."""
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ScriptUnreadable(f"{name}:{getattr(node, 'lineno', 1)}:{getattr(node, 'col_offset', 0) + 1}: "
                                   f"nested more than {MAX_DEPTH} levels deep; the audit refuses it.")
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            digits = _digits(abs(node.value))
            if digits > MAX_INT_DIGITS:
                raise ScriptUnreadable(f"{name}:{node.lineno}:{node.col_offset + 1}: an integer of "
                                       f"{digits:,} digits; the audit refuses integers over {MAX_INT_DIGITS} digits.")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
