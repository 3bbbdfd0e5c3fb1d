"""What a training script does, read from its syntax tree (it is never imported or run).

``read_script`` parses the file (``incidents.tools.audit.source`` refuses hostile input) and collects
the facts the audit rules judge: watch calls (``wandb.watch`` however spelled, Lightning's
``WandbLogger.watch``, a Hugging Face ``Trainer`` that reports to wandb with ``WANDB_WATCH`` set)
with ``log``/``log_freq`` traced to values, the model each watches and its size, ``torch.profiler``
contexts, ``DataLoader`` calls, whether the model is moved to a device, and host synchronisations in
the training step loop (a loop that calls ``.backward()``). Each call carries the conditions it runs
under, judged: dead (``if DEBUG:`` with ``DEBUG = False``), live, or undecided (and which test).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from incidents.tools.audit import calls
from incidents.tools.audit.models import ModelSize
from incidents.tools.audit.resolve import Resolver, Traced, Unknown, Value
from incidents.tools.audit.scopes import Bindings, Ctx, Guard, Scope, ScopedVisitor
from incidents.tools.audit.sizes import Sizes
from incidents.tools.audit.source import MAX_BYTES, ScriptUnreadable, Segments, read_source, source_lines

__all__ = ["Condition", "ScriptFacts", "ScriptUnreadable", "Site", "WatchCall", "read_script"]

#: What the Trainer's WandbCallback reads (transformers 5.x): ``WANDB_WATCH`` (default "false") and
#: ``logging_steps``; it calls ``wandb.watch(model, log=WANDB_WATCH, log_freq=max(100, logging_steps))``.
TRAINER_WATCH_DEFAULT = "false"
TRAINER_MIN_FREQ = 100


@dataclass(frozen=True)
class Condition:
    """How the ``if``/``while`` tests around a call decide: ``live``, ``dead`` or ``undecided``."""

    state: str = "live"
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class WatchCall:
    line: int
    end_line: int
    model: str
    log: Value
    log_freq: Value
    source: str
    api: str
    condition: Condition
    size: ModelSize | None = None
    size_note: str = ""
    fixable: bool = True


@dataclass(frozen=True)
class Site:
    """A call the rules judge: where it is, its source text and the conditions it runs under."""

    line: int
    end_line: int
    source: str
    detail: str = ""
    condition: Condition = Condition()


@dataclass
class ScriptFacts:
    path: Path
    lines: list[str]
    watches: list[WatchCall] = field(default_factory=list)
    model: ModelSize | None = None
    model_note: str = ""
    model_names: dict[str, int] = field(default_factory=dict)  # variable → last line of its construction
    moved: set[str] = field(default_factory=set)
    uses_cuda: bool = False
    #: A trainer that places the model on the device itself (Lightning's Trainer(accelerator="gpu"),
    #: Hugging Face's Trainer), named as the script writes it; None when the script places it.
    placed_by: str | None = None
    device_name: str | None = None
    profilers: list[Site] = field(default_factory=list)
    loaders: list[Site] = field(default_factory=list)
    syncs: list[Site] = field(default_factory=list)
    items: list[Site] = field(default_factory=list)


def _text(node: ast.AST) -> str:
    return ast.unparse(node)


def _moves_to_device(node: ast.Call) -> bool:
    """``x.to(...)`` or ``x.cuda()``: a move of a model built elsewhere, not a construction."""
    return isinstance(node.func, ast.Attribute) and node.func.attr in {"to", "cuda"}


def _kw(call: ast.Call, name: str, position: int | None = None) -> ast.AST | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if position is not None and len(call.args) > position and not any(isinstance(a, ast.Starred)
                                                                       for a in call.args[: position + 1]):
        return call.args[position]
    return None


def read_script(path: Path, max_bytes: int = MAX_BYTES) -> ScriptFacts:
    """Parse ``path`` and collect its facts; :class:`ScriptUnreadable` when it is refused."""
    text, tree = read_source(path, max_bytes)
    facts = ScriptFacts(path, source_lines(text))
    bindings = Bindings(tree)
    resolver = Resolver(tree, bindings)
    collector = _Collector(facts, bindings, resolver, Segments(facts.lines), tree)
    collector.visit(tree)
    collector.finish()
    return facts


def judge(guards: tuple[Guard, ...], resolver: Resolver) -> Condition:
    """Dead when a test is constant and its branch never runs; undecided when a test depends on run time."""
    dead, undecided = [], []
    for guard in guards:
        test = _text(guard.test)
        value = resolver.trace(guard.test, Ctx(guard.scope, guard.line, guard.block))
        wanted = "true" if guard.branch else "false"
        if isinstance(value, Traced) and value.certain:
            if bool(value.value) != guard.branch:
                text = f"disabled by {value.via}" if value.via != "literal" else \
                    f"disabled: `{test}` is always {'true' if value.value else 'false'}"
                dead.append(text + ("" if guard.branch else f" (else branch of `if {test}:`)"))
        elif isinstance(value, Traced):
            undecided.append(f"runs only when `{test}` (line {guard.line}) is {wanted}: {value.via}, which the run "
                             "can override, so the audit cannot decide it")
        else:
            undecided.append(f"runs only when `{test}` (line {guard.line}) is {wanted}, which the audit cannot "
                             f"decide ({value.reason})")
    if dead:
        return Condition("dead", tuple(dict.fromkeys(dead)))
    return Condition("undecided", tuple(dict.fromkeys(undecided))) if undecided else Condition()


class _Collector(ScopedVisitor):
    def __init__(self, facts: ScriptFacts, bindings: Bindings, resolver: Resolver, segment: Segments,
                 tree: ast.Module) -> None:
        super().__init__(bindings.module)
        self.facts, self.bindings, self.resolver, self.segment = facts, bindings, resolver, segment
        self.sizes = Sizes(resolver)
        imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names] + \
            [f"{n.module}.{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
             for a in n.names]
        self.wandb_imported = any(name.split(".")[0] == "wandb" for name in imported)
        self.lightning_imported = any("WandbLogger" in name or name.split(".")[0] in {"lightning", "pytorch_lightning"}
                                      for name in imported)
        self.loop_depth = 0
        self.loop_guards: list[int] = []
        self.trainers: list[tuple[ast.Call, Ctx, tuple[Guard, ...]]] = []
        self.constructions: list[tuple[ast.Call, Ctx]] = []

    def enter_scope(self, node: ast.AST) -> Scope:
        return self.bindings.scope_of(node)

    def site(self, node: ast.expr | ast.stmt, detail: str = "") -> Site:
        return Site(node.lineno, getattr(node, "end_lineno", node.lineno) or node.lineno,
                    self.segment(node), detail, judge(self.guards, self.resolver))

    def qualified(self, node: ast.AST) -> str | None:
        return self.bindings.qualified(node, self.ctx(node))

    def visit_Assign(self, node: ast.Assign) -> None:
        value = node.value
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if names and isinstance(value, ast.Call):
            if self._looks_like_model(value):
                for name in names:
                    self.facts.model_names.setdefault(name, node.end_lineno or node.lineno)
                if any(isinstance(n, ast.keyword) and n.arg == "device_map" for n in ast.walk(value)):
                    self.facts.moved |= set(names)  # placed by accelerate
            if isinstance(value.func, ast.Attribute) and value.func.attr in {"to", "cuda"}:
                self.facts.moved |= set(names)  # model = model.to(device), X.from_pretrained(...).cuda()
            if (self.qualified(value.func) or _text(value.func)) in {"torch.device", "device"}:
                self.facts.device_name = names[0]
        self.generic_visit(node)

    @staticmethod
    def _looks_like_model(value: ast.expr) -> bool:
        """A model construction, possibly chained (``X.from_pretrained(...).to(device)``), by its spelling."""
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in {"to", "cuda"}:
            value = value.func.value
        if not isinstance(value, ast.Call):
            return False
        func = _text(value.func)
        return (func.endswith(".from_pretrained") and "Config" not in func and "Tokenizer" not in func) \
            or func.rsplit(".", 1)[-1].endswith(("ForSequenceClassification", "Model", "ForMaskedLM"))

    def visit_For(self, node: ast.For | ast.AsyncFor | ast.While) -> None:
        steps = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
                    for n in ast.walk(node))
        self.loop_depth += steps
        self.loop_guards.append(len(self.guards) + isinstance(node, ast.While))
        if isinstance(node, ast.While):
            super().visit_While(node)
        else:
            super().visit_For(node)
        self.loop_guards.pop()
        self.loop_depth -= steps

    visit_While = visit_For
    visit_AsyncFor = visit_For

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        saved = self.loop_depth, self.loop_guards
        self.loop_depth, self.loop_guards = 0, []
        super().visit_FunctionDef(node)
        self.loop_depth, self.loop_guards = saved

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and node.value.startswith("cuda"):
            self.facts.uses_cuda = True

    def visit_Call(self, node: ast.Call) -> None:
        spelled = _text(node.func)
        func = self.qualified(node.func)
        name = func or spelled
        tail = name.rsplit(".", 1)[-1]
        self._placement(node, func, spelled)
        api = calls.watch_api(func, spelled, node, self.lightning_imported, self.wandb_imported)
        if api is not None:
            self._watch(node, *api)
        elif calls.is_trainer(func):
            self.trainers.append((node, self.ctx(node), self.guards))
        if self.sizes.builds_model(node, self.ctx(node)) and not _moves_to_device(node):
            self.constructions.append((node, self.ctx(node)))
        self._profiler_and_loader(node, name, spelled, tail)
        self._device_calls(node, name, spelled, tail)
        self.generic_visit(node)

    def _placement(self, node: ast.Call, func: str | None, spelled: str) -> None:
        """A trainer that moves the model to the GPU itself (Lightning's accelerator, Hugging Face's Trainer)."""
        accelerator = next((kw.value.value for kw in node.keywords if kw.arg == "accelerator"
                            and isinstance(kw.value, ast.Constant)), None)
        if accelerator in {"gpu", "cuda"}:
            self.facts.uses_cuda = True  # Lightning's Trainer(accelerator="gpu") moves the module itself
            self.facts.placed_by = f'{spelled}(accelerator="{accelerator}")'
        elif calls.is_trainer(func):
            self.facts.placed_by = f"{spelled} (Hugging Face's Trainer moves the model to the device)"

    def _profiler_and_loader(self, node: ast.Call, name: str, spelled: str, tail: str) -> None:
        """A torch profiler (scheduled or not), and a DataLoader that loads in the training process."""
        if name in {"torch.profiler.profile", "torch.autograd.profiler.profile"} or spelled == "profiler.profile":
            self.facts.profilers.append(self.site(node, "scheduled" if _kw(node, "schedule") is not None else ""))
        if tail == "DataLoader":
            workers = _kw(node, "num_workers", 5)
            value = self.resolver.trace(workers, self.ctx(node)) if workers is not None else None
            if workers is None or (isinstance(value, Traced) and value.value == 0):
                self.facts.loaders.append(self.site(node, "num_workers=0" if workers is not None else ""))

    def _device_calls(self, node: ast.Call, name: str, spelled: str, tail: str) -> None:
        """Moves to the GPU, and the calls that wait for it inside the training loop (synchronize, item)."""
        if tail in {"to", "cuda"} and isinstance(node.func, ast.Attribute):
            self.facts.moved.add(_text(node.func.value))
            if tail == "cuda":
                self.facts.uses_cuda = True
        if name in {"torch.cuda.synchronize"} or spelled == "cuda.synchronize":
            self.facts.uses_cuda = True
            if self.loop_depth:
                self.facts.syncs.append(self.site(node))
        guarded = bool(self.loop_guards) and len(self.guards) > self.loop_guards[-1]
        if tail == "item" and not node.args and self.loop_depth and not guarded:
            self.facts.items.append(self.site(node))

    def _watch(self, node: ast.Call, signature: calls.CallSignature, api: str) -> None:
        ctx = self.ctx(node)
        found = calls.with_defaults(calls.arguments(self.resolver, node, signature, ctx, ("log", "log_freq")),
                                    signature)
        model = _kw(node, signature.params[0], 0)
        size, note = self._model_size(model, ctx)
        self.facts.watches.append(WatchCall(
            node.lineno, node.end_lineno or node.lineno, _text(model) if model is not None else "",
            found["log"], found["log_freq"], self.segment(node), api,
            judge(self.guards, self.resolver), size, note))

    def _model_size(self, model: ast.AST | None, ctx: Ctx) -> tuple[ModelSize | None, str]:
        origin = self.resolver.origin(model, ctx) if model is not None else None
        if origin is not None and self.sizes.builds_model(*origin):
            return self.sizes.size(*origin)
        return None, ""

    def finish(self) -> None:
        """The script-wide model (the first construction whose size is known) and the Trainer's watches."""
        for call, ctx in self.constructions:
            size, note = self.sizes.size(call, ctx)
            if size is not None:
                self.facts.model = size
                break
            self.facts.model_note = self.facts.model_note or note
        for call, ctx, guards in self.trainers:
            self._trainer(call, ctx, guards)

    def _trainer(self, call: ast.Call, ctx: Ctx, guards: tuple[Guard, ...]) -> None:
        """A ``Trainer`` calls ``wandb.watch`` itself when it reports to wandb and ``WANDB_WATCH`` asks."""
        args_node = _kw(call, "args", 1)
        origin = self.resolver.origin(args_node, ctx) if args_node is not None else None
        undecided: list[str] = []
        about = ""
        settings: dict[str, Value | None] = {"report_to": None, "logging_steps": None}
        if origin is not None and calls.is_training_arguments(self.bindings.qualified(origin[0].func, origin[1])):
            settings = calls.arguments(self.resolver, origin[0], calls.TRAINING_ARGUMENTS, origin[1],
                                       ("report_to", "logging_steps"))
        elif args_node is not None:
            undecided.append(f"its args {_text(args_node)} could not be traced to TrainingArguments(...)")
        report_to = settings["report_to"]
        if isinstance(report_to, Traced):
            targets = report_to.value if isinstance(report_to.value, list | tuple) else [report_to.value]
            if not {"wandb", "all"} & {t for t in targets if isinstance(t, str)}:
                return  # reports elsewhere: no watch
            about = "; report_to='all' includes wandb when it is installed" if "wandb" not in targets else ""
        elif report_to is None:
            undecided.append("report_to is not given: before transformers 5.0 that meant every installed "
                             "integration (wandb included), from 5.0 on none")
        else:
            undecided.append(f"whether it reports to wandb is unknown (report_to: {report_to.reason})")
        log = self.resolver.environment_value("WANDB_WATCH") or Traced(
            TRAINER_WATCH_DEFAULT, "WANDB_WATCH is not set in the script; the Trainer's default is 'false' "
            "(the environment it runs in may set it)", "default")
        freq = self._trainer_freq(settings["logging_steps"])
        condition = judge(guards, self.resolver)
        if undecided and condition.state != "dead":
            condition = Condition("undecided", (*condition.notes, *undecided))
        model = _kw(call, "model", 0)
        size, note = self._model_size(model, ctx)
        self.facts.watches.append(WatchCall(
            call.lineno, call.end_lineno or call.lineno, _text(model) if model is not None else "", log, freq,
            self.segment(call),
            f"{self.bindings.qualified(call.func, ctx)} reporting to wandb (its WandbCallback calls wandb.watch)"
            + about,
            condition, size, note, fixable=False))

    @staticmethod
    def _trainer_freq(steps: Value | None) -> Value:
        if steps is None:
            return Traced(500, f"max({TRAINER_MIN_FREQ}, logging_steps) with TrainingArguments' default "
                               "logging_steps 500", "constant")
        if isinstance(steps, Unknown):
            return Unknown(f"logging_steps could not be resolved ({steps.reason})", (TRAINER_MIN_FREQ,))
        if isinstance(steps.value, int) and steps.value >= 1:
            return Traced(max(TRAINER_MIN_FREQ, steps.value),
                          f"max({TRAINER_MIN_FREQ}, logging_steps={steps.value}): the Trainer's WandbCallback"
                          + ("" if steps.via == "literal" else f"; {steps.via}"), steps.kind)
        return Unknown(f"logging_steps={steps.value!r} is a fraction of the run's steps, which the audit does not "
                       "know", (TRAINER_MIN_FREQ,))
