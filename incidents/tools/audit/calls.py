"""The library calls the audit recognises, by qualified name, and their arguments as Python binds them.

``watch_api`` says whether a call is ``wandb.watch`` (however it is spelled: ``wb.watch``, ``watch``
from ``from wandb import watch``, ``run.watch``, ``wandb.run.watch``, ``wandb.init().watch``), a
Lightning ``WandbLogger.watch`` (or its ``.experiment.watch``, which is the wandb run), and with which
signature and defaults. ``arguments`` binds a call's positional, keyword and ``**dict`` arguments to
a signature's parameters, tracing each to a value; a parameter the call leaves out gets the library
default, named as such.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from incidents.tools.audit.resolve import Resolver, Traced, Unknown, Value
from incidents.tools.audit.scopes import Ctx


@dataclass(frozen=True)
class CallSignature:
    """Parameters in positional order and the defaults the library applies."""

    label: str
    params: tuple[str, ...]
    defaults: dict[str, Any]


#: ``wandb.watch(models, criterion=None, log="gradients", log_freq=1000, idx=None, log_graph=False)``
#: in wandb 0.31 (``Run.watch`` is the same).
WANDB_WATCH = CallSignature("wandb.watch", ("models", "criterion", "log", "log_freq", "idx", "log_graph"),
                        {"log": "gradients", "log_freq": 1000})
#: Lightning's ``WandbLogger.watch(model, log="gradients", log_freq=100, log_graph=True)``.
LIGHTNING_WATCH = CallSignature("WandbLogger.watch", ("model", "log", "log_freq", "log_graph"),
                            {"log": "gradients", "log_freq": 100})
#: A ``.watch(…)`` on a receiver the audit could not resolve: whose defaults apply is not known.
UNRESOLVED_WATCH = CallSignature("wandb.watch and WandbLogger.watch", ("model", "log", "log_freq"), {"log": "gradients"})
#: ``TrainingArguments`` fields that decide whether (and how often) the Trainer calls wandb.watch.
TRAINING_ARGUMENTS = CallSignature("TrainingArguments", ("output_dir",), {"logging_steps": 500})

_WANDB_RUN = r"wandb(\.sdk\.wandb_init)?\.init\(\)|wandb\.run|wandb\.sdk\.wandb_run\.Run\(\)"
_LIGHTNING = r"(pytorch_lightning|lightning\.pytorch|lightning)\.loggers(\.wandb)?\.WandbLogger\(\)"
_TRAINERS = re.compile(r"(transformers(\.trainer(_seq2seq)?)?\.(Seq2Seq)?Trainer|trl(\.\w+)*\.\w*Trainer)")
_TRAINING_ARGS = re.compile(r"(transformers(\.training_args(_seq2seq)?)?\.(Seq2Seq)?TrainingArguments"
                            r"|trl(\.\w+)*\.\w*Config)")


def watch_api(qualified: str | None, spelled: str, call: ast.Call, lightning_imported: bool,
              wandb_imported: bool) -> tuple[CallSignature, str] | None:
    """The watch signature of a call and how it was recognised, or None when it is no watch call."""
    if qualified is not None:
        if re.fullmatch(rf"wandb(\.sdk\.wandb_watch)?\.watch|({_WANDB_RUN})\.watch", qualified):
            return WANDB_WATCH, qualified
        if re.fullmatch(rf"({_LIGHTNING})\.experiment\.watch", qualified):
            return WANDB_WATCH, "WandbLogger.experiment.watch (the wandb run)"
        if re.fullmatch(rf"{_LIGHTNING}\.watch", qualified):
            return LIGHTNING_WATCH, "WandbLogger.watch"
        if not qualified.startswith("<"):
            return None  # a watch of some other library, resolved as such
    if not spelled.endswith(".watch"):
        return None
    if spelled.endswith(".experiment.watch") and lightning_imported:
        return WANDB_WATCH, f"{spelled} (a Lightning logger's wandb run, by its spelling)"
    if spelled.endswith("logger.watch") and lightning_imported:
        return LIGHTNING_WATCH, f"{spelled} (Lightning's WandbLogger, by its spelling)"
    if "." in spelled and (lightning_imported or wandb_imported) and \
            any(kw.arg in {"log", "log_freq"} for kw in call.keywords):
        return UNRESOLVED_WATCH, f"{spelled} (receiver not resolved; taken as a watch call for its log/log_freq)"
    return None


def is_trainer(qualified: str | None) -> bool:
    return bool(qualified and _TRAINERS.fullmatch(qualified))


def is_training_arguments(qualified: str | None) -> bool:
    return bool(qualified and _TRAINING_ARGS.fullmatch(qualified))


def _traced(resolver: Resolver, node: ast.AST, ctx: Ctx) -> Value:
    """The argument's value; an unknown one says which expression it was (``config["log_freq"]: …``)."""
    found = resolver.trace(node, ctx)
    spelled = ast.unparse(node)
    if isinstance(found, Unknown) and not found.reason.startswith(spelled) and len(spelled) <= 60:
        return Unknown(f"{spelled}: {found.reason}", found.candidates)
    return found


def arguments(resolver: Resolver, call: ast.Call, signature: CallSignature, ctx: Ctx,
              wanted: tuple[str, ...]) -> dict[str, Value | None]:
    """``wanted`` parameters of ``call`` traced to values; None for one the call leaves out."""
    out: dict[str, Value | None] = dict.fromkeys(wanted)
    starred: ast.Starred | None = None
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            starred = arg
            break
        if index < len(signature.params) and signature.params[index] in out:
            out[signature.params[index]] = _traced(resolver, arg, ctx)
    unpacked: list[tuple[Value, str]] = []
    for kw in call.keywords:
        if kw.arg is None:
            unpacked.append((resolver.trace(kw.value, ctx), ast.unparse(kw.value)))
        elif kw.arg in out:
            out[kw.arg] = _traced(resolver, kw.value, ctx)
    for found, text in unpacked:
        _fill_from_unpacked(out, found, text)
    if starred is not None:
        for name in wanted:
            if out[name] is None and name in signature.params:
                out[name] = Unknown(f"*{ast.unparse(starred.value)} fills positional arguments "
                                    "the audit cannot count")
    return out


def _fill_from_unpacked(out: dict[str, Value | None], found: Value, text: str) -> None:
    """The parameters still missing, from a ``**text`` the call unpacks (its keys, or why it is unknown)."""
    for name in [n for n, value in out.items() if value is None]:
        if isinstance(found, Traced) and isinstance(found.value, dict):
            if name in found.value:
                prefix = "" if found.via == "literal" else f"{found.via}; "
                out[name] = Traced(found.value[name], f"{prefix}**{text}[{name!r}] = {found.value[name]!r}",
                                   found.kind)
        else:
            reason = found.reason if isinstance(found, Unknown) else f"{text} is not a dict"
            out[name] = Unknown(f"**{text} could not be resolved ({reason})")


def with_defaults(found: dict[str, Value | None], signature: CallSignature) -> dict[str, Value]:
    """Every parameter a value: the call's, else the library default (named), else unknown."""
    out: dict[str, Value] = {}
    for name, value in found.items():
        if value is not None:
            out[name] = value
        elif name in signature.defaults:
            out[name] = Traced(signature.defaults[name], f"{signature.label} default")
        else:
            out[name] = Unknown(f"{name} not given, and its default depends on what the receiver is "
                                "(wandb.watch: 1000, Lightning's WandbLogger.watch: 100)", (100, 1000))
    return out
