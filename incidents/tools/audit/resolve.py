"""Trace an expression in a training script back to a literal, without running anything.

Training scripts rarely write ``log_freq=1`` inline: the value sits in a module constant, a config
dict, an argparse default or an environment default. ``Resolver`` follows the simple, common cases —
names bound to literals (the last binding above the use), ``args.x`` to ``add_argument("--x",
default=…)``, ``cfg["x"]``/``cfg.get("x", d)`` on dict literals, ``os.environ.get("X", d)``,
``int(…)``/``str(…)`` wrappers — and says where the value came from. Anything else is unresolved.
"""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass
from typing import Any

UNRESOLVED = object()
_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
               ast.FloorDiv: operator.floordiv, ast.Div: operator.truediv}


@dataclass(frozen=True)
class Traced:
    """A resolved value and how it was found (``"literal"``, ``"LOG_FREQ = 1 (line 12)"``…)."""

    value: Any
    via: str


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return UNRESOLVED


def _dest(call: ast.Call) -> str | None:
    """The ``dest`` an ``add_argument`` call stores to: explicit, else the first long option."""
    for kw in call.keywords:
        if kw.arg == "dest" and isinstance(kw.value, ast.Constant):
            return str(kw.value.value)
    names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    longs = [n for n in names if n.startswith("--")]
    chosen = longs[0] if longs else (names[0] if names else None)
    return chosen.lstrip("-").replace("-", "_") if chosen else None


class Resolver:
    """Bindings of one parsed module, collected once."""

    def __init__(self, tree: ast.Module) -> None:
        self.bindings: dict[str, list[tuple[int, ast.AST]]] = {}
        self.arguments: dict[str, tuple[int, ast.AST | None]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.bindings.setdefault(target.id, []).append((node.lineno, node.value))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
                self.bindings.setdefault(node.target.id, []).append((node.lineno, node.value))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "add_argument":
                dest = _dest(node)
                if dest:
                    default = next((kw.value for kw in node.keywords if kw.arg == "default"), None)
                    self.arguments[dest] = (node.lineno, default)
        for entries in self.bindings.values():
            entries.sort(key=lambda e: e[0])

    def binding(self, name: str, line: int) -> tuple[int, ast.AST] | None:
        """The last assignment to ``name`` above ``line`` (else the first one anywhere)."""
        entries = self.bindings.get(name) or []
        above = [e for e in entries if e[0] < line]
        return above[-1] if above else (entries[0] if entries else None)

    def trace(self, node: ast.AST | None, line: int, depth: int = 0) -> Traced | None:
        """The literal value of ``node`` at ``line``, or None when it cannot be followed."""
        if node is None or depth > 8:
            return None
        value = _literal(node)
        if value is not UNRESOLVED:
            return Traced(value, "literal")
        if isinstance(node, ast.Name):
            bound = self.binding(node.id, line)
            if bound is None:
                return None
            found = self.trace(bound[1], bound[0], depth + 1)
            return Traced(found.value, f"{node.id} = {found.value!r} (line {bound[0]})") if found else None
        if isinstance(node, ast.Attribute) and node.attr in self.arguments:
            arg_line, default = self.arguments[node.attr]
            found = self.trace(default, arg_line, depth + 1) if default is not None else Traced(None, "")
            return Traced(found.value, f"argparse --{node.attr.replace('_', '-')} default {found.value!r} "
                                       f"(line {arg_line})") if found else None
        if isinstance(node, ast.Subscript):
            return self._item(node.value, node.slice, None, line, depth)
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
            return self._arithmetic(node, line, depth)
        if isinstance(node, ast.Call):
            return self._call(node, line, depth)
        return None

    def _arithmetic(self, node: ast.BinOp, line: int, depth: int) -> Traced | None:
        """``4 * HIDDEN`` and the like, on numbers only."""
        left, right = self.trace(node.left, line, depth + 1), self.trace(node.right, line, depth + 1)
        if left is None or right is None or not all(isinstance(v.value, int | float) and not isinstance(v.value, bool)
                                                    for v in (left, right)):
            return None
        try:
            value = _ARITHMETIC[type(node.op)](left.value, right.value)
        except (ArithmeticError, ValueError):
            return None
        vias = [v.via for v in (left, right) if v.via != "literal"]
        return Traced(value, "; ".join(vias) if vias else "literal")

    def _call(self, node: ast.Call, line: int, depth: int) -> Traced | None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in {"int", "str", "float", "bool"} and len(node.args) == 1:
            inner = self.trace(node.args[0], line, depth + 1)
            if inner is None:
                return None
            try:
                return Traced({"int": int, "str": str, "float": float, "bool": bool}[func.id](inner.value), inner.via)
            except (TypeError, ValueError):
                return None
        if isinstance(func, ast.Attribute) and func.attr in {"get", "getenv"} and node.args:
            default = node.args[1] if len(node.args) > 1 else None
            receiver = ast.unparse(func.value)
            if receiver in {"os.environ", "os", "environ"}:
                found = self.trace(default, line, depth + 1)
                key = ast.unparse(node.args[0])
                return Traced(found.value, f"default of environment variable {key}") if found else None
            return self._item(func.value, node.args[0], default, line, depth)
        return None

    def _dict_node(self, container: ast.AST, line: int) -> tuple[int, ast.Dict] | None:
        if isinstance(container, ast.Dict):
            return line, container
        if isinstance(container, ast.Name):
            bound = self.binding(container.id, line)
            if bound is not None and isinstance(bound[1], ast.Dict):
                return bound
        return None

    def _item(self, container: ast.AST, key: ast.AST, default: ast.AST | None, line: int,
              depth: int) -> Traced | None:
        """``d["k"]`` / ``d.get("k", default)`` where ``d`` is (bound to) a dict literal."""
        key_value = self.trace(key, line, depth + 1)
        if key_value is None:
            return None
        literal = self._dict_node(container, line)
        if literal is not None:
            for k, v in zip(literal[1].keys, literal[1].values, strict=True):
                if k is not None and _literal(k) == key_value.value:
                    found = self.trace(v, literal[0], depth + 1)
                    return Traced(found.value, f"{ast.unparse(container)}[{key_value.value!r}] = {found.value!r} "
                                               f"(line {literal[0]})") if found else None
        mapping = self.trace(container, line, depth + 1)
        if mapping is not None and isinstance(mapping.value, dict) and key_value.value in mapping.value:
            return Traced(mapping.value[key_value.value],
                          f"{ast.unparse(container)}[{key_value.value!r}] = {mapping.value[key_value.value]!r}")
        if default is not None:
            found = self.trace(default, line, depth + 1)
            return Traced(found.value, f"default of {ast.unparse(container)}.get({key_value.value!r})") \
                if found else None
        return None
