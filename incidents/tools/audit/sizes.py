"""A model's size from the call that builds it, read in the script: ``X.from_pretrained(name,
num_labels=…)``, ``X(config)``, ``X.from_config(config)`` with ``config`` a ``BertConfig(...)`` or a
``*Config.from_pretrained(name, …)``. Each size names its source: the checkpoint and the table it
came from, the config's line and the sizes it states, the head and its labels.
"""

from __future__ import annotations

import ast

from incidents.tools.audit import models
from incidents.tools.audit.calls import CallSignature, arguments
from incidents.tools.audit.models import ModelSize
from incidents.tools.audit.resolve import Resolver, Traced, Unknown
from incidents.tools.audit.scopes import Ctx

CONFIG_SIZES = ("vocab_size", "hidden_size", "num_hidden_layers", "intermediate_size",
                "max_position_embeddings", "type_vocab_size", "num_labels", "id2label")
BERT_CONFIG = CallSignature("BertConfig", ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                       "intermediate_size"), {})
PRETRAINED = CallSignature("from_pretrained", ("pretrained_model_name_or_path",), {})
MOVES = {"to", "cuda", "cpu", "half", "float", "bfloat16", "train", "eval", "requires_grad_"}


def unwrap(call: ast.Call) -> ast.Call:
    """``X.from_pretrained(...).to(device).train()`` → the ``from_pretrained`` call."""
    while isinstance(call.func, ast.Attribute) and call.func.attr in MOVES and isinstance(call.func.value, ast.Call):
        call = call.func.value
    return call


class Sizes:
    """Reads model constructions with one module's resolver."""

    def __init__(self, resolver: Resolver) -> None:
        self.resolver = resolver

    def _name(self, func: ast.AST, ctx: Ctx) -> str:
        return self.resolver.bindings.qualified(func, ctx) or ast.unparse(func)

    def builds_model(self, call: ast.Call, ctx: Ctx) -> str | None:
        """The model class a call constructs (``BertForSequenceClassification``), or None."""
        call = unwrap(call)
        name = self._name(call.func, ctx)
        if name.endswith((".from_pretrained", ".from_config")):
            name = name.rsplit(".", 1)[0]
        tail = name.rsplit(".", 1)[-1]
        if "Config" in tail or "Tokenizer" in tail or models.head_of(tail) is None:
            return None
        return tail

    def size(self, call: ast.Call, ctx: Ctx) -> tuple[ModelSize | None, str]:
        """The size of the model ``call`` builds and its source; (None, why) when it cannot be known."""
        call = unwrap(call)
        cls = self.builds_model(call, ctx)
        head = models.head_of(cls) if cls is not None else None
        if cls is None or head is None:
            return None, "not a model construction the audit knows"
        method = self._name(call.func, ctx).rsplit(".", 1)[-1]
        line = call.lineno
        config_node = next((kw.value for kw in call.keywords if kw.arg == "config"), None)
        if method != "from_pretrained" and config_node is None and call.args:
            config_node = call.args[0]
        sizes: dict[str, int] = {}
        parts: list[str] = []
        name: str | None = None
        if method == "from_pretrained":
            found = arguments(self.resolver, call, PRETRAINED, ctx, ("pretrained_model_name_or_path",))
            checkpoint = found["pretrained_model_name_or_path"]
            if not isinstance(checkpoint, Traced) or not isinstance(checkpoint.value, str):
                reason = checkpoint.reason if isinstance(checkpoint, Unknown) else "no checkpoint named"
                return None, f"{cls}.from_pretrained at line {line}: the checkpoint is unknown ({reason})"
            name = checkpoint.value
            if config_node is None:
                if name not in models.CHECKPOINTS:
                    return None, f"{cls}.from_pretrained({name!r}) at line {line}: not in the known checkpoint table"
                sizes.update(models.CHECKPOINTS[name])
                parts.append(f"{name}'s architecture (known checkpoint table)")
        if config_node is not None:
            config, why = self._config(config_node, ctx)
            if config is None:
                return None, f"{cls} at line {line}: {why}"
            sizes.update(config[0])
            parts.append(config[1])
        stated = self._stated(call, ctx, ("num_labels", "id2label"))
        if isinstance(stated, str):
            return None, f"{cls} at line {line}: {stated}"
        sizes.update(stated[0])
        if stated[1]:
            parts.append(f"{stated[1]} (line {line})")
        labels = sizes.get("num_labels", models.BERT_DEFAULTS["num_labels"])
        head_text = {"classifier": f"{cls} with a {labels}-label classifier",
                     "token-classifier": f"{cls} with a {labels}-label token classifier",
                     "masked-lm": f"{cls} (masked-LM head)", "pooler": f"{cls} (encoder and pooler)"}[head]
        source = f"computed from {' and '.join(parts) or 'BertConfig defaults'}: {head_text}"
        return models.bert(name or cls, sizes, head, source), source

    def _stated(self, call: ast.Call, ctx: Ctx, names: tuple[str, ...],
                signature: CallSignature = PRETRAINED) -> tuple[dict[str, int], str] | str:
        """Sizes a call states (``num_labels=14``, ``id2label={…}``, ``**sizes``), or why they are unknown."""
        found = arguments(self.resolver, call, signature, ctx, names)
        sizes: dict[str, int] = {}
        for key, value in found.items():
            if value is None:
                continue
            if isinstance(value, Unknown):
                return f"{key} is unknown ({value.reason})"
            if key == "id2label":
                if isinstance(value.value, dict) and "num_labels" not in sizes:
                    sizes["num_labels"] = len(value.value)
                continue
            if not isinstance(value.value, int) or isinstance(value.value, bool) or value.value < 0:
                return f"{key}={value.value!r} is not a size"
            sizes[key] = value.value
        return sizes, models.describe_sizes(sizes)

    def _config(self, node: ast.AST, ctx: Ctx) -> tuple[tuple[dict[str, int], str] | None, str]:
        origin = self.resolver.origin(node, ctx)
        if origin is None:
            return None, f"its config {ast.unparse(node)} could not be traced to a config call"
        call, where = origin
        name = self._name(call.func, where)
        tail = name.rsplit(".", 1)[-1]
        if tail == "from_pretrained" and name.rsplit(".", 2)[-2].endswith("Config"):
            checkpoint = arguments(self.resolver, call, PRETRAINED, where, ("pretrained_model_name_or_path",))
            value = checkpoint["pretrained_model_name_or_path"]
            if not isinstance(value, Traced) or value.value not in models.CHECKPOINTS:
                return None, f"its config comes from a checkpoint the audit does not know (line {call.lineno})"
            stated = self._stated(call, where, CONFIG_SIZES)
            if isinstance(stated, str):
                return None, f"its config at line {call.lineno}: {stated}"
            described = f"{value.value}'s architecture (known checkpoint table)" + \
                (f" with {stated[1]} (config at line {call.lineno})" if stated[1] else "")
            return ({**models.CHECKPOINTS[value.value], **stated[0]}, described), ""
        if tail.endswith("Config") and tail.startswith(("Bert", "Auto")):
            stated = self._stated(call, where, CONFIG_SIZES, BERT_CONFIG)
            if isinstance(stated, str):
                return None, f"its config at line {call.lineno}: {stated}"
            return (stated[0], f"{tail} at line {call.lineno} ({stated[1] or 'no sizes stated'}; others at "
                               "BertConfig's defaults)"), ""
        return None, f"its config is built by {tail} (line {call.lineno}), which the audit does not read"
