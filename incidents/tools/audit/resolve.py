"""Trace an expression in a training script back to a value, without running anything.

Training scripts rarely write ``log_freq=1`` inline: the value sits in a module or function
constant, a config dict, an argparse default or an environment default. ``Resolver`` follows names
through the binding table (``incidents.tools.audit.scopes``), ``args.x`` to ``add_argument("--x",
default=…)``, ``cfg["x"]``/``cfg.get("x", d)`` on dict literals (``**`` merges included),
``os.environ.get("X", d)`` (or the value the script sets), ``int(…)``/``len(…)`` wrappers and
arithmetic, and says where the value came from.

A traced value is ``Traced`` — a ``constant`` of the file, or a ``default`` someone can override
when the script runs (argparse, environment, a parameter's default) — or ``Unknown``, which says why
and lists the candidate values it saw (a name assigned 1 in one branch and 10 in another). Nothing
is ever guessed: an unknown is never replaced by a library's default.
"""

from __future__ import annotations

import ast
import operator
from typing import Any

from incidents.tools.audit.scopes import MAX_CANDIDATES, Bindings, Ctx
from incidents.tools.audit.traced import UNRESOLVED, Traced, Unknown, Value, short
from incidents.tools.audit.traced import expression_text as _text
from incidents.tools.audit.traced import literal as _literal
from incidents.tools.audit.traced import plausible as _plausible
from incidents.tools.audit.traced import weakest as _weakest

__all__ = ["Resolver", "Traced", "Unknown", "Value", "short"]
MAX_DEPTH = 16
_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
               ast.FloorDiv: operator.floordiv, ast.Div: operator.truediv, ast.Mod: operator.mod}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_CASTS = {"int": int, "str": str, "float": float, "bool": bool}
ENVIRON = {"os.environ", "os.getenv", "os.environ.get", "os.environ.setdefault"}


def _dest(call: ast.Call) -> str | None:
    """The ``dest`` an ``add_argument`` call stores to: explicit, else the first long option."""
    for kw in call.keywords:
        if kw.arg == "dest" and isinstance(kw.value, ast.Constant):
            return str(kw.value.value)
    names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    longs = [n for n in names if n.startswith("--")]
    chosen = longs[0] if longs else (names[0] if names else None)
    return chosen.lstrip("-").replace("-", "_") if chosen else None


#: The expressions the resolver evaluates, and the method that does; any other is left to run time.
_EVALUATED: dict[type[ast.AST], str] = {
    ast.Name: "_name", ast.Attribute: "_attribute", ast.Subscript: "_subscript", ast.BinOp: "_arithmetic",
    ast.UnaryOp: "_unary", ast.Dict: "_dict", ast.IfExp: "_choice", ast.BoolOp: "_boolean",
    ast.Compare: "_compare", ast.Call: "_call",
}


def _evaluated_operator(node: ast.AST) -> bool:
    """Arithmetic, ``not`` and negation, and single comparisons are evaluated; other operators are not."""
    if isinstance(node, ast.BinOp):
        return type(node.op) in _ARITHMETIC
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, ast.Not | ast.USub)
    if isinstance(node, ast.Compare):
        return len(node.ops) == 1
    return True


class Resolver:
    """Values of one parsed module's expressions (see the module docstring)."""

    def __init__(self, tree: ast.Module, bindings: Bindings | None = None) -> None:
        self.bindings = bindings or Bindings(tree)
        self.arguments: dict[str, tuple[int, ast.Call]] = {}
        self.parser_defaults: dict[str, tuple[int, ast.expr]] = {}
        self.environment: dict[str, list[tuple[int, ast.AST, str]]] = {}  # key → (line, value, set|setdefault)
        self._memo: dict[tuple[int, int, int, tuple], Value] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                self._note_call(node, node.func)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    key = self._environ_key(target)
                    if key is not None:
                        self.environment.setdefault(key, []).append((node.lineno, node.value, "set"))

    def _note_call(self, node: ast.Call, func: ast.Attribute) -> None:
        attr = func.attr
        if attr == "add_argument" and (dest := _dest(node)):
            self.arguments[dest] = (node.lineno, node)
        elif attr == "set_defaults":
            for kw in node.keywords:
                if kw.arg:
                    self.parser_defaults[kw.arg] = (node.lineno, kw.value)
        elif attr in {"setdefault", "update"} and _text(func.value) in {"os.environ", "environ"}:
            pairs = [(a, b) for a, b in ([node.args[:2]] if attr == "setdefault" and len(node.args) == 2 else [])]
            pairs += [(ast.Constant(kw.arg), kw.value) for kw in node.keywords if kw.arg]
            if attr == "update" and node.args and isinstance(node.args[0], ast.Dict):
                pairs += [(k, v) for k, v in zip(node.args[0].keys, node.args[0].values, strict=True) if k is not None]
            for key, value in pairs:
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    self.environment.setdefault(key.value, []).append(
                        (node.lineno, value, "setdefault" if attr == "setdefault" else "set"))

    @staticmethod
    def _environ_key(target: ast.AST) -> str | None:
        if isinstance(target, ast.Subscript) and _text(target.value) in {"os.environ", "environ"} \
                and isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str):
            return target.slice.value
        return None

    # --- values ------------------------------------------------------------------------------
    def trace(self, node: ast.AST | None, ctx: Ctx, depth: int = 0) -> Value:
        """The value of ``node`` evaluated at ``ctx`` (remembered: a name used a thousand times is traced once)."""
        if isinstance(node, ast.Constant) or node is None:  # cheap, and may be a node built on the fly
            return self._trace(node, ctx, depth)
        key = (id(node), id(ctx.scope), ctx.line, ctx.block)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = self._trace(node, ctx, depth)
        return found

    def _trace(self, node: ast.AST | None, ctx: Ctx, depth: int) -> Value:
        if node is None:
            return Unknown("no value")
        if depth > MAX_DEPTH:
            return Unknown(f"{_text(node)} is too far from a literal to follow")
        value = _literal(node)
        if value is not UNRESOLVED:
            return Traced(value, "literal")
        method = _EVALUATED.get(type(node))
        if method is None or not _evaluated_operator(node):
            return Unknown(f"{_text(node)} is computed when the script runs")
        return getattr(self, method)(node, ctx, depth)

    def _subscript(self, node: ast.Subscript, ctx: Ctx, depth: int) -> Value:
        return self._item(node.value, node.slice, None, ctx, depth)

    def _unary(self, node: ast.UnaryOp, ctx: Ctx, depth: int) -> Value:
        inner = self.trace(node.operand, ctx, depth + 1)
        if isinstance(inner, Traced) and (isinstance(node.op, ast.Not) or isinstance(inner.value, int | float)):
            return Traced(not inner.value if isinstance(node.op, ast.Not) else -inner.value, inner.via, inner.kind)
        return inner if isinstance(inner, Unknown) else Unknown(f"{_text(node)} is not a number")

    def _name(self, node: ast.Name, ctx: Ctx, depth: int) -> Value:
        if node.id == "__name__":
            return Traced("__main__", "the script run as a program")
        candidates = self.bindings.candidates(node.id, ctx)
        if not candidates:
            return Unknown(f"{node.id} is not assigned in the file")
        if len(candidates) > MAX_CANDIDATES:
            return Unknown(f"{node.id} is assigned more than {MAX_CANDIDATES} times")
        found: list[tuple[Any, Value]] = []
        for binding in candidates:
            where = Ctx(binding.scope, binding.line, binding.block)
            if binding.kind == "assign":
                inner = self.trace(binding.value, where, depth + 1)
                if isinstance(inner, Traced):
                    suffix = "" if inner.via == "literal" else f", {inner.via}"
                    inner = Traced(inner.value, f"{node.id} = {short(inner.value)} ({binding.where}){suffix}", inner.kind)
            elif binding.kind == "import" and binding.target == "typing.TYPE_CHECKING":
                inner = Traced(False, "typing.TYPE_CHECKING is False when the script runs")
            elif binding.kind == "param":
                default = self.trace(binding.value, where, depth + 1) if binding.value is not None else None
                reason = f"{node.id} is a parameter of {binding.scope.name}() ({binding.where})"
                inner = Unknown(reason + (f", default {short(default.value)}" if isinstance(default, Traced) else ""),
                                (default.value,) if isinstance(default, Traced) else ())
            else:
                inner = Unknown(f"{node.id} is set by a {'loop' if binding.kind == 'loop' else 'statement'} "
                                f"the audit cannot evaluate ({binding.where})")
            found.append((binding, inner))
        return self._merge(node.id, found)

    @staticmethod
    def _merge(name: str, found: list[tuple[Any, Value]]) -> Value:
        if len(found) == 1:
            return found[0][1]
        traced = [v for _, v in found if isinstance(v, Traced)]
        values = {repr(v.value) for v in traced}
        if len(traced) == len(found) and len(values) == 1:
            return Traced(traced[0].value, traced[0].via + f" (and {len(found) - 1} more assignment(s) alike)",
                          _weakest(traced))
        candidates = tuple(dict.fromkeys(
            [v.value for v in traced] + [c for _, v in found if isinstance(v, Unknown) for c in v.candidates]))
        lines = ", ".join(f"{short(v.value)} ({b.where})" if isinstance(v, Traced) else
                          f"{'an import' if b.kind == 'import' else 'unknown'} ({b.where})"
                          for b, v in sorted(found, key=lambda f: f[0].line))
        return Unknown(f"{name} may be any of {lines}", candidates)

    def _attribute(self, node: ast.Attribute, ctx: Ctx, depth: int) -> Value:
        if node.attr in self.arguments and isinstance(node.value, ast.Name):
            arg_line, call = self.arguments[node.attr]
            option = f"argparse --{node.attr.replace('_', '-')}"
            default = next((kw.value for kw in call.keywords if kw.arg == "default"), None)
            if node.attr in self.parser_defaults:
                arg_line, default = self.parser_defaults[node.attr]
            action = next((kw.value.value for kw in call.keywords
                           if kw.arg == "action" and isinstance(kw.value, ast.Constant)), None)
            if default is None and action in {"store_true", "store_false"}:
                return Traced(action == "store_false", f"{option} default {action == 'store_false'} (line {arg_line})",
                              "default")
            choices = next((kw.value for kw in call.keywords if kw.arg == "choices"), None)
            options = self.trace(choices, ctx, depth + 1) if choices is not None else None
            candidates = tuple(options.value) if isinstance(options, Traced) and \
                isinstance(options.value, list | tuple | set) else ()
            if default is None:
                return Unknown(f"{option} has no default (line {arg_line}): the value comes from the command line",
                               candidates)
            found = self.trace(default, Ctx(self.bindings.module, arg_line), depth + 1)
            if isinstance(found, Unknown):
                return found
            return Traced(found.value, f"{option} default {short(found.value)} (line {arg_line})", "default")
        return Unknown(f"{_text(node)} is an attribute the audit does not follow")

    def _arithmetic(self, node: ast.BinOp, ctx: Ctx, depth: int) -> Value:
        """``4 * HIDDEN`` and the like, on numbers only."""
        left, right = self.trace(node.left, ctx, depth + 1), self.trace(node.right, ctx, depth + 1)
        if isinstance(left, Unknown):
            return left
        if isinstance(right, Unknown):
            return right
        if not all(isinstance(v.value, int | float) and not isinstance(v.value, bool) for v in (left, right)):
            return Unknown(f"{_text(node)} is not arithmetic on numbers")
        try:
            value = _ARITHMETIC[type(node.op)](left.value, right.value)
        except (ArithmeticError, ValueError):
            return Unknown(f"{_text(node)} cannot be computed")
        if not _plausible(value):
            return Unknown(f"{_text(node)} is implausibly large")
        vias = [v.via for v in (left, right) if v.via != "literal"]
        return Traced(value, "; ".join(vias) if vias else "literal", _weakest([left, right]))

    def _dict(self, node: ast.Dict, ctx: Ctx, depth: int) -> Value:
        """A dict display with names and ``**`` merges in it."""
        merged: dict[Any, Any] = {}
        vias: list[Traced] = []
        for key, value in zip(node.keys, node.values, strict=True):
            found = self.trace(value, ctx, depth + 1)
            if isinstance(found, Unknown):
                return found
            if key is None:
                if not isinstance(found.value, dict):
                    return Unknown(f"**{_text(value)} is not a dict")
                merged.update(found.value)
            else:
                k = self.trace(key, ctx, depth + 1)
                if isinstance(k, Unknown):
                    return k
                try:
                    merged[k.value] = found.value
                except TypeError:
                    return Unknown(f"{_text(key)} is not a usable key")
            vias.append(found)
        via = "; ".join(v.via for v in vias if v.via != "literal") or "literal"
        return Traced(merged, via, _weakest(vias))

    def _choice(self, node: ast.IfExp, ctx: Ctx, depth: int) -> Value:
        test = self.trace(node.test, ctx, depth + 1)
        if isinstance(test, Traced) and test.certain:
            return self.trace(node.body if test.value else node.orelse, ctx, depth + 1)
        sides = [self.trace(side, ctx, depth + 1) for side in (node.body, node.orelse)]
        candidates = tuple(dict.fromkeys(s.value for s in sides if isinstance(s, Traced)))
        return Unknown(f"{_text(node)} depends on {_text(node.test)}", candidates)

    def _boolean(self, node: ast.BoolOp, ctx: Ctx, depth: int) -> Value:
        """``a or b`` / ``a and b``: Python's value, decided only as far as the operands are known."""
        parts: list[Traced] = []
        for operand in node.values:
            found = self.trace(operand, ctx, depth + 1)
            if isinstance(found, Unknown):
                return Unknown(f"{_text(node)} depends on {_text(operand)}: {found.reason}", found.candidates)
            parts.append(found)
            if bool(found.value) == isinstance(node.op, ast.Or):
                break
        return Traced(parts[-1].value, "; ".join(p.via for p in parts if p.via != "literal") or "literal",
                      _weakest(parts))

    def _compare(self, node: ast.Compare, ctx: Ctx, depth: int) -> Value:
        left, right = self.trace(node.left, ctx, depth + 1), self.trace(node.comparators[0], ctx, depth + 1)
        if isinstance(left, Unknown):
            return left
        if isinstance(right, Unknown):
            return right
        try:
            value = bool(_COMPARE[type(node.ops[0])](left.value, right.value))
        except TypeError:
            return Unknown(f"{_text(node)} compares values of different types")
        via = "; ".join(v.via for v in (left, right) if v.via != "literal") or "literal"
        return Traced(value, via, _weakest([left, right]))

    def _call(self, node: ast.Call, ctx: Ctx, depth: int) -> Value:
        func = node.func
        name = self.bindings.qualified(func, ctx) or _text(func)
        tail = name.rsplit(".", 1)[-1]
        if isinstance(func, ast.Name) and func.id in {*_CASTS, "len"} and len(node.args) == 1 and not node.keywords:
            inner = self.trace(node.args[0], ctx, depth + 1)
            if isinstance(inner, Unknown):
                return inner
            try:
                value = len(inner.value) if func.id == "len" else _CASTS[func.id](inner.value)
            except (TypeError, ValueError, OverflowError):
                return Unknown(f"{_text(node)} fails on {short(inner.value)}")
            return Traced(value, inner.via, inner.kind) if _plausible(value) else Unknown(f"{_text(node)} is too large")
        if name in {"os.getenv", "os.environ.get", "environ.get", "getenv"} and node.args:
            return self._environ(node, ctx, depth)
        if isinstance(func, ast.Name) and func.id == "dict" and not node.args:
            return self._dict(ast.Dict([ast.Constant(kw.arg) if kw.arg else None for kw in node.keywords],
                                       [kw.value for kw in node.keywords]), ctx, depth)
        if tail == "get" and isinstance(func, ast.Attribute) and node.args:
            return self._item(func.value, node.args[0], node.args[1] if len(node.args) > 1 else ast.Constant(None),
                              ctx, depth)
        return Unknown(f"{_text(node)} is computed when the script runs")

    def _environ(self, node: ast.Call, ctx: Ctx, depth: int) -> Value:
        key = self.trace(node.args[0], ctx, depth + 1)
        if isinstance(key, Unknown) or not isinstance(key.value, str):
            return Unknown(f"{_text(node)} reads an environment variable the audit cannot name")
        found = self.environment_value(key.value, ctx, depth)
        if found is not None:
            return found
        default = node.args[1] if len(node.args) > 1 else None
        if default is None:
            return Unknown(f"environment variable {key.value} has no default here: the value comes from the "
                           "environment the script runs in")
        value = self.trace(default, ctx, depth + 1)
        if isinstance(value, Unknown):
            return value
        return Traced(value.value, f"default of environment variable {key.value!r}", "default")

    def environment_value(self, key: str, ctx: Ctx | None = None, depth: int = 0) -> Value | None:
        """The value the script itself gives environment variable ``key`` (None when it never sets it)."""
        entries = self.environment.get(key)
        if not entries:
            return None
        line, value, how = entries[-1]
        where = Ctx(self.bindings.module, line) if ctx is None else ctx
        found = self.trace(value, where, depth + 1)
        if isinstance(found, Unknown):
            return found
        if len(entries) > 1 and len({repr(self.trace(v, where, depth + 1)) for _, v, _ in entries}) > 1:
            return Unknown(f"environment variable {key} is set to different values in the file (lines "
                           + ", ".join(str(e[0]) for e in entries) + ")")
        spelled = f"os.environ[{key!r}] = {short(found.value)}" if how == "set" else \
            f"os.environ.setdefault({key!r}, {short(found.value)})"
        return Traced(found.value, f"{spelled} (line {line})", "constant" if how == "set" else "default")

    def _item(self, container: ast.AST, key: ast.AST, default: ast.AST | None, ctx: Ctx, depth: int) -> Value:
        """``d["k"]`` / ``d.get("k", default)`` where ``d`` is (bound to) a dict."""
        key_value = self.trace(key, ctx, depth + 1)
        if isinstance(key_value, Unknown):
            return key_value
        if _text(container) in {"os.environ", "environ"} and isinstance(key_value.value, str):
            found = self.environment_value(key_value.value, ctx, depth)
            return found or Unknown(f"environment variable {key_value.value} comes from the environment the "
                                    "script runs in")
        mapping = self.trace(container, ctx, depth + 1)
        if isinstance(mapping, Unknown):
            return mapping
        if not isinstance(mapping.value, dict | list | tuple):
            return Unknown(f"{_text(container)} is not a dict")
        try:
            value = mapping.value[key_value.value]
        except (KeyError, IndexError, TypeError):
            if default is None:
                return Unknown(f"{_text(container)} has no key {short(key_value.value)}")
            found = self.trace(default, ctx, depth + 1)
            if isinstance(found, Unknown):
                return found
            return Traced(found.value, f"default of {_text(container)}.get({short(key_value.value)})", found.kind)
        prefix = "" if mapping.via == "literal" else f"{mapping.via}; "
        return Traced(value, f"{prefix}{_text(container)}[{short(key_value.value)}] = {short(value)}", mapping.kind)

    # --- call sites --------------------------------------------------------------------------
    def origin(self, node: ast.AST | None, ctx: Ctx, depth: int = 0) -> tuple[ast.Call, Ctx] | None:
        """The call an expression's value comes from (``model = Bert…(config)`` → that call), if one."""
        if node is None or depth > MAX_DEPTH:
            return None
        if isinstance(node, ast.Call):
            return node, ctx
        if isinstance(node, ast.Name):
            found = [b for b in self.bindings.candidates(node.id, ctx) if b.kind == "assign"]
            calls = {id(b.value): b for b in found}
            if len(calls) == 1:
                binding = found[0]
                return self.origin(binding.value, Ctx(binding.scope, binding.line, binding.block), depth + 1)
        return None
