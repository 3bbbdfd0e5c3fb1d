"""Model sizes the audit can know without downloading anything: BERT's parameter count computed from
its sizes, for the head the script builds, and a table of well-known checkpoints' sizes.

``wandb.watch`` cost is linear in the elements it histograms and in the number of tensors, so the
audit needs both. Counts follow the architecture ``transformers`` builds for each head (the tests
check them against real models built on the meta device): an encoder of 5 + 16 per layer tensors,
then a pooler (2) and a classifier of ``num_labels`` outputs (2), or the masked-LM head.
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
#: Architecture sizes of checkpoints a script names in ``from_pretrained`` (their config.json values).
CHECKPOINTS: dict[str, dict[str, int]] = {}
for _prefix in ("", "google-bert/"):
    for _case, _vocab in (("uncased", 30522), ("cased", 28996)):
        CHECKPOINTS[f"{_prefix}bert-base-{_case}"] = {"vocab_size": _vocab}
        CHECKPOINTS[f"{_prefix}bert-large-{_case}"] = {"vocab_size": _vocab, "hidden_size": 1024,
                                                       "num_hidden_layers": 24, "intermediate_size": 4096}
#: The head each model class puts on the encoder.
HEADS = {"ForSequenceClassification": "classifier", "ForTokenClassification": "token-classifier",
         "ForMaskedLM": "masked-lm", "Model": "pooler"}


def head_of(class_name: str) -> str | None:
    """``classifier`` for ``BertForSequenceClassification``/``AutoModelForSequenceClassification``…"""
    tail = class_name.rsplit(".", 1)[-1]
    for suffix, head in HEADS.items():
        if tail.endswith(suffix) and (tail.startswith(("Bert", "Auto")) or tail == suffix):
            return head
    return None


def bert_size(vocab_size: int = 30522, hidden_size: int = 768, num_hidden_layers: int = 12,
              intermediate_size: int = 3072, max_position_embeddings: int = 512, type_vocab_size: int = 2,
              num_labels: int = 2, head: str = "classifier") -> tuple[int, int]:
    """``(parameters, tensors)`` of a BERT with these sizes and ``head``."""
    h, i = hidden_size, intermediate_size
    embeddings = (vocab_size + max_position_embeddings + type_vocab_size) * h + 2 * h
    layer = 4 * (h * h + h) + (h * i + i) + (i * h + h) + 2 * 2 * h
    params, tensors = embeddings + num_hidden_layers * layer, 5 + 16 * num_hidden_layers
    pooler, classifier = (h * h + h, 2), (h * num_labels + num_labels, 2)
    extra = {"pooler": [pooler], "classifier": [pooler, classifier], "token-classifier": [classifier],
             # transform dense + LayerNorm + the output bias; the decoder weight is the tied word embeddings
             "masked-lm": [(h * h + h + 2 * h + vocab_size, 5)]}[head]
    return params + sum(p for p, _ in extra), tensors + sum(t for _, t in extra)


def describe_sizes(sizes: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items())


def bert(name: str, sizes: dict[str, int], head: str, source: str) -> ModelSize:
    """A BERT of ``sizes`` (others at BertConfig's defaults) with ``head``; ``source`` says where from."""
    merged = {**BERT_DEFAULTS, **{k: v for k, v in sizes.items() if k in BERT_DEFAULTS}}
    params, tensors = bert_size(**merged, head=head)
    return ModelSize(name, params, tensors, source)


def known(name: str, num_labels: int = 2) -> ModelSize | None:
    """The checkpoint ``name`` with a 2-label (or ``num_labels``) classification head, if it is known."""
    if name not in CHECKPOINTS:
        return None
    return bert(name, {**CHECKPOINTS[name], "num_labels": num_labels}, "classifier",
                f"computed from {name}'s architecture (known checkpoint table) with a {num_labels}-label "
                "classification head")


KNOWN_MODELS: dict[str, ModelSize] = {name: known(name) for name in CHECKPOINTS}  # type: ignore[misc]
