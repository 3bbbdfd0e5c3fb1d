"""Python's name binding, read from a syntax tree: which import or assignment a name refers to.

``Bindings`` builds a table per scope (the module, each function, each class) the way the compiler
does: assignments, imports, parameters, loop and ``with`` targets, ``global`` declarations. A name
is then looked up as Python would at that point: in its own scope by flow (the nearest binding above
the use, and the ones before it when that binding sits in a branch the use is not in), else in the
enclosing function scopes and the module, where a function — which runs after the module did — may
see any of the module's bindings. ``qualified`` turns ``wb.watch``, ``watch`` (``from wandb import
watch``) and ``run.watch`` (``run = wandb.init()``) into ``wandb.watch`` and ``wandb.init().watch``,
so the audit judges a call by what it calls, not how it is spelled.

``ScopedVisitor`` is the walk both this table and the audit's collector use: it knows the scope, the
branch (``block``) and the conditions (``guards``) each node sits under.
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field

#: The branches a node sits in: (id of the branching node, branch index) each; a global assigned
#: inside a function sits in ("global", id of that function) instead.
Block = tuple[tuple[int | str, int], ...]
#: A name bound more often than this in one scope is not followed (each use would weigh every binding).
MAX_CANDIDATES = 32
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


@dataclass(frozen=True)
class Guard:
    """An ``if``/``while`` test a node runs under, and which branch it is in (``True``: the body)."""

    test: ast.expr
    branch: bool
    scope: Scope
    line: int
    block: Block


@dataclass(eq=False)
class Scope:
    kind: str  # module | function | class
    node: ast.AST
    parent: Scope | None
    name: str = ""
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)
    star_imports: list[str] = field(default_factory=list)

    def bind(self, binding: Binding) -> None:
        self.bindings.setdefault(binding.name, []).append(binding)


@dataclass(frozen=True, eq=False)
class Binding:
    """One place a name gets a value: ``kind`` is import, assign, param, def, loop or other."""

    name: str
    line: int
    kind: str
    value: ast.AST | None
    scope: Scope
    block: Block
    target: str | None = None  # an import's qualified name

    @property
    def where(self) -> str:
        return f"line {self.line}"


@dataclass(frozen=True)
class Ctx:
    """Where an expression is evaluated: its scope, line and branch."""

    scope: Scope
    line: int
    block: Block = ()


def _own_statements(node: ast.AST) -> Iterator[ast.AST]:
    """Every node inside ``node``'s body that belongs to its scope (not to a nested def or class)."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        yield child
        if not isinstance(child, (*FUNCTIONS, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(child))


class ScopedVisitor(ast.NodeVisitor):
    """A walk that tracks the scope, block and guards of every node (see the module docstring)."""

    def __init__(self, module: Scope) -> None:
        self.scope = module
        self.block: Block = ()
        self.guards: tuple[Guard, ...] = ()

    def ctx(self, node: ast.AST) -> Ctx:
        return Ctx(self.scope, getattr(node, "lineno", 0), self.block)

    def enter_scope(self, node: ast.AST) -> Scope:  # pragma: no cover - each subclass says how
        raise NotImplementedError

    def _branch(self, node: ast.AST, index: int, body: list[ast.stmt], guard: Guard | None = None) -> None:
        saved = self.block, self.guards
        self.block = (*self.block, (id(node), index))
        if guard is not None:
            self.guards = (*self.guards, guard)
        for stmt in body:
            self.visit(stmt)
        self.block, self.guards = saved

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        self._branch(node, 0, node.body, Guard(node.test, True, self.scope, node.lineno, self.block))
        self._branch(node, 1, node.orelse, Guard(node.test, False, self.scope, node.lineno, self.block))

    def visit_While(self, node: ast.While) -> None:
        self.visit(node.test)
        self._branch(node, 0, node.body, Guard(node.test, True, self.scope, node.lineno, self.block))
        self._branch(node, 1, node.orelse)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        self.visit(node.target)
        self._branch(node, 0, node.body)
        self._branch(node, 1, node.orelse)

    visit_AsyncFor = visit_For

    def visit_Try(self, node: ast.Try | ast.TryStar) -> None:
        self._branch(node, 0, node.body)
        for index, handler in enumerate(node.handlers, start=2):
            if handler.type is not None:
                self.visit(handler.type)
            self.handler(handler)
            self._branch(node, index, handler.body)
        self._branch(node, 1, node.orelse)
        for stmt in node.finalbody:  # always runs
            self.visit(stmt)

    visit_TryStar = visit_Try

    def handler(self, node: ast.ExceptHandler) -> None:
        """An ``except … as name`` clause (bound by the table builder)."""

    def visit_Match(self, node: ast.Match) -> None:
        self.visit(node.subject)
        for index, case in enumerate(node.cases):
            self._branch(node, index, case.body)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        if isinstance(node, ast.ClassDef):
            for base in (*node.bases, *node.keywords):
                self.visit(base)
        else:
            for default in (*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)):
                self.visit(default)
        self.define(node)
        saved = self.scope, self.block
        self.scope, self.block = self.enter_scope(node), ()
        for stmt in node.body:
            self.visit(stmt)
        self.scope, self.block = saved

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef

    def define(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        """A def or class statement binds its name (the table builder records it)."""


class Bindings(ScopedVisitor):
    """The binding table of one module (see the module docstring)."""

    def __init__(self, tree: ast.Module) -> None:
        self.module = Scope("module", tree, None, "<module>")
        super().__init__(self.module)
        self.scopes: dict[int, Scope] = {id(tree): self.module}
        self._lines: dict[tuple[int, str], list[int]] = {}
        self._declare(self.module, tree)
        self.visit(tree)

    # --- building ---------------------------------------------------------------------------
    def enter_scope(self, node: ast.AST) -> Scope:
        kind = "class" if isinstance(node, ast.ClassDef) else "function"
        scope = Scope(kind, node, self.scope, getattr(node, "name", ""))
        self.scopes[id(node)] = scope
        self._declare(scope, node)
        if isinstance(node, FUNCTIONS):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
            for arg, default in (*zip(positional, defaults, strict=True),
                                 *zip(args.kwonlyargs, args.kw_defaults, strict=True)):
                scope.bind(Binding(arg.arg, node.lineno, "param", default, scope, ()))
            for rest in (args.vararg, args.kwarg):
                if rest is not None:
                    scope.bind(Binding(rest.arg, node.lineno, "other", None, scope, ()))
        return scope

    @staticmethod
    def _declare(scope: Scope, node: ast.AST) -> None:
        for child in _own_statements(node):
            if isinstance(child, ast.Global):
                scope.declared_global.update(child.names)
            elif isinstance(child, ast.Nonlocal):
                scope.declared_nonlocal.update(child.names)

    def _bind(self, name: str, line: int, kind: str, value: ast.AST | None, target: str | None = None) -> None:
        scope = self.scope
        if name in scope.declared_global and scope is not self.module:
            # Assigned from inside a function: it may happen at any time, so it never dominates a use.
            self.module.bind(Binding(name, line, kind, value, self.module, (("global", id(scope.node)),), target))
            return
        scope.bind(Binding(name, line, kind, value, scope, self.block, target))

    def _targets(self, target: ast.AST, value: ast.AST | None, line: int) -> None:
        if isinstance(target, ast.Name):
            self._bind(target.id, line, "assign" if value is not None else "other", value)
        elif isinstance(target, ast.Tuple | ast.List):
            values = value.elts if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts) \
                and not any(isinstance(e, ast.Starred) for e in target.elts) else [None] * len(target.elts)
            for element, element_value in zip(target.elts, values, strict=True):
                self._targets(element, element_value, line)
        elif isinstance(target, ast.Starred):
            self._targets(target.value, None, line)

    def define(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self._bind(node.name, node.lineno, "def", node)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for target in node.targets:
            self._targets(target, node.value, node.lineno)
            if not isinstance(target, ast.Name):
                self.visit(target)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
            self._targets(node.target, node.value, node.lineno)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        if isinstance(node.target, ast.Name):
            self._bind(node.target.id, node.lineno, "other", node)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        self._bind(node.target.id, node.lineno, "assign", node.value)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self._targets(node.target, None, node.lineno)
        super().visit_For(node)

    visit_AsyncFor = visit_For

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self._targets(item.optional_vars, item.context_expr, node.lineno)
        for stmt in node.body:
            self.visit(stmt)

    visit_AsyncWith = visit_With

    def handler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self._bind(node.name, node.lineno, "other", None)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self._bind(alias.asname, node.lineno, "import", None, alias.name)
            else:  # `import a.b` binds `a`
                first = alias.name.split(".", 1)[0]
                self._bind(first, node.lineno, "import", None, first)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = ("." * node.level) + (node.module or "")
        for alias in node.names:
            if alias.name == "*":
                self.scope.star_imports.append(module)
            else:
                self._bind(alias.asname or alias.name, node.lineno, "import", None, f"{module}.{alias.name}")

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit(node.body)  # its parameters are its own; nothing here binds in the enclosing scope

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        for generator in node.generators:  # targets belong to the comprehension's own scope
            self.visit(generator.iter)
            for condition in generator.ifs:
                self.visit(condition)

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    # --- looking up ---------------------------------------------------------------------------
    def scope_of(self, node: ast.AST) -> Scope:
        return self.scopes[id(node)]

    def owner(self, name: str, scope: Scope) -> Scope | None:
        """The scope whose binding of ``name`` a use in ``scope`` sees (Python's LEGB, classes skipped)."""
        if name in scope.declared_global:
            return self.module if name in self.module.bindings else None
        if name in scope.bindings and name not in scope.declared_nonlocal:
            return scope
        parent = scope.parent
        while parent is not None:
            if parent.kind != "class" and name in parent.bindings and name not in parent.declared_global:
                return parent
            if parent.kind != "class" and name in parent.declared_global:
                return self.module if name in self.module.bindings else None
            parent = parent.parent
        return None

    def candidates(self, name: str, ctx: Ctx) -> list[Binding]:
        """The bindings of ``name`` that may be current at ``ctx``, nearest first."""
        owner = self.owner(name, ctx.scope)
        if owner is None:
            return []
        entries = owner.bindings[name]
        if owner is not ctx.scope:
            # The function runs after its enclosing scope ran: any of that scope's bindings may be the one.
            return entries[::-1][: MAX_CANDIDATES + 1]
        lines = self._lines.get((id(owner), name))
        if lines is None or len(lines) != len(entries):
            entries.sort(key=lambda e: e.line)
            lines = self._lines[(id(owner), name)] = [e.line for e in entries]
        found = []
        for index in range(bisect.bisect_left(lines, ctx.line) - 1, -1, -1):
            binding = entries[index]
            found.append(binding)
            if ctx.block[: len(binding.block)] == binding.block or len(found) > MAX_CANDIDATES:
                break  # this binding dominates the use: nothing earlier can be current
        return found

    def star_module(self, scope: Scope) -> str | None:
        """A module imported with ``*`` in ``scope`` or above (the name might come from it)."""
        current: Scope | None = scope
        while current is not None:
            if current.star_imports:
                return current.star_imports[-1]
            current = current.parent
        return None

    def qualified(self, node: ast.AST, ctx: Ctx, depth: int = 0) -> str | None:
        """``wandb.watch`` for ``wb.watch`` after ``import wandb as wb``; ``f()`` for a call; None if unknown."""
        if depth > 12:
            return None
        if isinstance(node, ast.Name):
            names = set()
            found = self.candidates(node.id, ctx)
            if len(found) > MAX_CANDIDATES:
                return None
            for binding in found:
                name = self._binding_name(binding, depth)
                if name is not None:
                    names.add(name)
            if not names and not found and (star := self.star_module(ctx.scope)):
                return f"{star}.{node.id}"
            return names.pop() if len(names) == 1 else None
        if isinstance(node, ast.Attribute):
            base = self.qualified(node.value, ctx, depth + 1)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Call):
            base = self.qualified(node.func, ctx, depth + 1)
            return f"{base}()" if base else None
        return None

    def _binding_name(self, binding: Binding, depth: int) -> str | None:
        if binding.kind == "import":
            return binding.target
        if binding.kind == "assign" and isinstance(binding.value, ast.Name | ast.Attribute | ast.Call):
            return self.qualified(binding.value, Ctx(binding.scope, binding.line, binding.block), depth + 1)
        if binding.kind == "def":
            return f"<{binding.scope.name}>.{binding.name}"
        return None
