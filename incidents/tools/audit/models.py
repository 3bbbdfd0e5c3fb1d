"""Model sizes the audit can know without downloading anything: a table of well-known checkpoints and
BERT's parameter count computed from a config's sizes.

``wandb.watch`` cost is linear in the elements it histograms and in the number of tensors, so the
audit needs both. BERT-family counts follow the architecture ``transformers`` builds for
``BertForSequenceClassification`` (``incidents.tools.repro.model`` checks the tensor count against a real
model: 9 + 16 per layer).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSize:
    """Parameters and parameter tensors, and where the figures come from."""

    name: str
    parameters: int
    tensors: int | None
    source: str


#: BertConfig's defaults (bert-base-uncased), used for any size a script's config leaves out.
BERT_DEFAULTS = {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "intermediate_size": 3072,
                 "max_position_embeddings": 512, "type_vocab_size": 2, "num_labels": 2}


def bert_size(vocab_size: int = 30522, hidden_size: int = 768, num_hidden_layers: int = 12,
              intermediate_size: int = 3072, max_position_embeddings: int = 512, type_vocab_size: int = 2,
              num_labels: int = 2) -> tuple[int, int]:
    """``(parameters, tensors)`` of ``BertForSequenceClassification`` with these sizes."""
    h, i = hidden_size, intermediate_size
    embeddings = (vocab_size + max_position_embeddings + type_vocab_size) * h + 2 * h
    layer = 4 * (h * h + h) + (h * i + i) + (i * h + h) + 2 * 2 * h
    head = (h * h + h) + (h * num_labels + num_labels)
    return embeddings + num_hidden_layers * layer + head, 9 + 16 * num_hidden_layers


def _bert(name: str, vocab: int, hidden: int, layers: int) -> ModelSize:
    params, tensors = bert_size(vocab, hidden, layers, 4 * hidden)
    return ModelSize(name, params, tensors, f"known model table ({name} with a 2-label classification head)")


KNOWN_MODELS: dict[str, ModelSize] = {m.name: m for m in (
    _bert("bert-base-uncased", 30522, 768, 12),
    _bert("bert-base-cased", 28996, 768, 12),
    _bert("bert-large-uncased", 30522, 1024, 24),
    _bert("bert-large-cased", 28996, 1024, 24),
    _bert("google-bert/bert-base-uncased", 30522, 768, 12),
    _bert("google-bert/bert-base-cased", 28996, 768, 12),
)}


def from_config(sizes: dict[str, int], line: int) -> ModelSize:
    """A BERT built from a config whose sizes the script states (others at BertConfig's defaults)."""
    merged = {**BERT_DEFAULTS, **{k: v for k, v in sizes.items() if k in BERT_DEFAULTS}}
    params, tensors = bert_size(**merged)
    stated = ", ".join(f"{k}={v}" for k, v in sizes.items() if k in BERT_DEFAULTS)
    return ModelSize("BertConfig", params, tensors, f"BertConfig at line {line} ({stated}; others at defaults)")
