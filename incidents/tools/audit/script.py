"""What a training script does, read from its syntax tree (it is never imported or run).

``read_script`` parses the file and collects the facts the audit rules judge: ``wandb.watch`` calls
with their ``log``/``log_freq`` traced to values, the model's construction, ``torch.profiler``
contexts, ``DataLoader`` calls, whether the model is moved to a device, and host synchronisations in
the training step loop (a loop that calls ``.backward()``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from incidents.errors import InvalidEvidence
from incidents.tools.audit.models import KNOWN_MODELS, ModelSize, from_config
from incidents.tools.audit.resolve import Resolver, Traced

#: ``wandb.watch(models, criterion=None, log="gradients", log_freq=1000, ...)`` in wandb 0.31.
WATCH_DEFAULTS = {"log": "gradients", "log_freq": 1000}
CONFIG_SIZES = ("vocab_size", "hidden_size", "num_hidden_layers", "intermediate_size",
                "max_position_embeddings", "type_vocab_size", "num_labels")


class ScriptUnreadable(InvalidEvidence):
    """A script the audit cannot read or parse; the message names the line and column."""


@dataclass(frozen=True)
class WatchCall:
    line: int
    end_line: int
    model: str
    log: Traced | None
    log_freq: Traced | None
    source: str


@dataclass(frozen=True)
class Site:
    """A call the rules judge: where it is and its source text."""

    line: int
    end_line: int
    source: str
    detail: str = ""


@dataclass
class ScriptFacts:
    path: Path
    lines: list[str]
    watches: list[WatchCall] = field(default_factory=list)
    model: ModelSize | None = None
    model_names: dict[str, int] = field(default_factory=dict)  # variable → last line of its construction
    moved: set[str] = field(default_factory=set)
    uses_cuda: bool = False
    device_name: str | None = None
    profilers: list[Site] = field(default_factory=list)
    loaders: list[Site] = field(default_factory=list)
    syncs: list[Site] = field(default_factory=list)
    items: list[Site] = field(default_factory=list)


def _dotted(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except (ValueError, AttributeError):  # pragma: no cover - unparse handles every parsed node
        return ""


def _kw(call: ast.Call, name: str, position: int | None = None) -> ast.AST | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if position is not None and len(call.args) > position:
        return call.args[position]
    return None


def read_script(path: Path) -> ScriptFacts:
    """Parse ``path`` and collect its facts; :class:`ScriptUnreadable` when it cannot be parsed."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise ScriptUnreadable(f"{path.name}: no such file.") from e
    except (OSError, UnicodeDecodeError) as e:
        raise ScriptUnreadable(f"{path.name}: cannot be read as UTF-8 text ({type(e).__name__}).") from e
    try:
        tree = ast.parse(text, filename=path.name)
    except SyntaxError as e:
        where = f"{path.name}:{e.lineno}:{e.offset}" if e.lineno else path.name
        raise ScriptUnreadable(f"{where}: does not parse: {e.msg}.") from e
    except ValueError as e:  # null bytes
        raise ScriptUnreadable(f"{path.name}: does not parse: {e}.") from e
    facts = ScriptFacts(path, text.splitlines())
    _Collector(facts, Resolver(tree), text).visit(tree)
    return facts


class _Collector(ast.NodeVisitor):
    def __init__(self, facts: ScriptFacts, resolver: Resolver, text: str) -> None:
        self.facts = facts
        self.resolver = resolver
        self.text = text
        self.watch_names = {"wandb.watch"}
        self.run_names: set[str] = set()
        self.loop_depth = 0
        self.guarded = 0

    def site(self, node: ast.AST, detail: str = "") -> Site:
        return Site(node.lineno, getattr(node, "end_lineno", node.lineno) or node.lineno,
                    ast.get_source_segment(self.text, node) or _dotted(node), detail)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module == "wandb":
            self.watch_names |= {a.asname or a.name for a in node.names if a.name == "watch"}
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        value = node.value
        if isinstance(value, ast.Call) and _dotted(value.func) == "wandb.init":
            self.run_names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if names and self._builds_model(value):
            for name in names:
                self.facts.model_names.setdefault(name, node.end_lineno or node.lineno)
            if any(isinstance(n, ast.keyword) and n.arg == "device_map" for n in ast.walk(value)):
                self.facts.moved |= set(names)  # placed by accelerate
        if names and isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                and value.func.attr in {"to", "cuda"}:  # model = model.to(device), X.from_pretrained(...).cuda()
            self.facts.moved |= set(names)
        if names and isinstance(value, ast.Call) and _dotted(value.func) in {"torch.device", "device"}:
            self.facts.device_name = names[0]
        self.generic_visit(node)

    def _builds_model(self, value: ast.AST) -> bool:
        """A model construction, possibly chained (``X.from_pretrained(...).to(device)``)."""
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in {"to", "cuda"}:
            value = value.func.value
        if not isinstance(value, ast.Call):
            return False
        func = _dotted(value.func)
        return (func.endswith(".from_pretrained") and "Config" not in func and "Tokenizer" not in func) \
            or func.rsplit(".", 1)[-1].endswith(("ForSequenceClassification", "Model", "ForMaskedLM"))

    def visit_For(self, node: ast.For | ast.While) -> None:
        steps = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
                    for n in ast.walk(node))
        self.loop_depth += steps
        saved, self.guarded = self.guarded, 0
        self.generic_visit(node)
        self.loop_depth -= steps
        self.guarded = saved

    visit_While = visit_For
    visit_AsyncFor = visit_For

    def visit_If(self, node: ast.If) -> None:
        self.guarded += 1
        self.generic_visit(node)
        self.guarded -= 1

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        saved = (self.loop_depth, self.guarded)
        self.loop_depth = self.guarded = 0
        self.generic_visit(node)
        self.loop_depth, self.guarded = saved

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and node.value.startswith("cuda"):
            self.facts.uses_cuda = True

    def visit_Call(self, node: ast.Call) -> None:
        func = _dotted(node.func)
        tail = func.rsplit(".", 1)[-1]
        if func in self.watch_names or (tail == "watch" and func.rsplit(".", 1)[0] in self.run_names):
            self._watch(node)
        elif func.endswith("from_pretrained") and node.args and self.facts.model is None:
            name = self.resolver.trace(node.args[0], node.lineno)
            if name is not None and isinstance(name.value, str) and name.value in KNOWN_MODELS:
                self.facts.model = KNOWN_MODELS[name.value]
        if tail.endswith("Config") and tail != "Config":
            self._config(node)
        if func in {"torch.profiler.profile", "profiler.profile", "torch.autograd.profiler.profile"}:
            schedule = _kw(node, "schedule")
            self.facts.profilers.append(self.site(node, "scheduled" if schedule is not None else ""))
        if tail == "DataLoader":
            workers = _kw(node, "num_workers", 5)
            value = self.resolver.trace(workers, node.lineno) if workers is not None else None
            if workers is None or (value is not None and value.value == 0):
                self.facts.loaders.append(self.site(node, "num_workers=0" if workers is not None else ""))
        if tail in {"to", "cuda"} and isinstance(node.func, ast.Attribute):
            self.facts.moved.add(_dotted(node.func.value))
            if tail == "cuda":
                self.facts.uses_cuda = True
        if func in {"torch.cuda.synchronize", "cuda.synchronize"}:
            self.facts.uses_cuda = True
            if self.loop_depth:
                self.facts.syncs.append(self.site(node))
        if tail == "item" and not node.args and self.loop_depth and not self.guarded:
            self.facts.items.append(self.site(node))
        self.generic_visit(node)

    def _watch(self, node: ast.Call) -> None:
        model = node.args[0] if node.args else _kw(node, "models")
        log = _kw(node, "log", 2)
        freq = _kw(node, "log_freq", 3)
        self.facts.watches.append(WatchCall(
            node.lineno, node.end_lineno or node.lineno, _dotted(model) if model is not None else "",
            self.resolver.trace(log, node.lineno) if log is not None else Traced(WATCH_DEFAULTS["log"], "wandb default"),
            self.resolver.trace(freq, node.lineno) if freq is not None
            else Traced(WATCH_DEFAULTS["log_freq"], "wandb default"),
            ast.get_source_segment(self.text, node) or _dotted(node)))

    def _config(self, node: ast.Call) -> None:
        sizes = {}
        for kw in node.keywords:
            if kw.arg in CONFIG_SIZES:
                found = self.resolver.trace(kw.value, node.lineno)
                if found is not None and isinstance(found.value, int):
                    sizes[kw.arg] = found.value
        if sizes and (self.facts.model is None or self.facts.model.name == "BertConfig"):
            self.facts.model = from_config(sizes, node.lineno)
