"""Values the audit traces expressions to: ``Traced`` (found, and how) or ``Unknown`` (why not).

A traced value is a ``constant`` of the file, or a ``default`` someone can override when the script
runs (argparse, environment, a parameter's default); an unknown lists the candidate values it saw.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

UNRESOLVED = object()
#: Numbers beyond this are not a size or a frequency: treated as unknown rather than computed with.
PLAUSIBLE = 10**15


@dataclass(frozen=True)
class Traced:
    """A resolved value and how it was found (``"literal"``, ``"LOG_FREQ = 1 (line 12)"``…)."""

    value: Any
    via: str
    kind: str = "constant"  # or "default": the script's value unless its caller overrides it

    @property
    def certain(self) -> bool:
        return self.kind == "constant"


@dataclass(frozen=True)
class Unknown:
    """A value the file does not determine: why, and the values it might take."""

    reason: str
    candidates: tuple[Any, ...] = ()


Value = Traced | Unknown


def literal(node: ast.AST) -> Any:
    """``ast.literal_eval``, or ``UNRESOLVED`` for what is not a plausible literal."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return UNRESOLVED
    return value if plausible(value) else UNRESOLVED


def plausible(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return True
    return value == value and abs(value) <= PLAUSIBLE  # NaN and huge numbers are no size or frequency


def expression_text(node: ast.AST) -> str:
    """The expression as written (unparsed), cut to 60 characters."""
    try:
        spelled = ast.unparse(node)
    except (ValueError, RecursionError):  # pragma: no cover - parsed trees are bounded in depth
        return "…"
    return spelled if len(spelled) <= 60 else spelled[:57] + "..."


def short(value: Any) -> str:
    """``repr`` cut to 40 characters, for a via sentence."""
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def weakest(values: list[Traced]) -> str:
    return "constant" if all(v.certain for v in values) else "default"
