"""The reproducer's model: BERT for sequence classification, random weights, synthetic batches.

The reference incident fine-tuned BERT-base; we rebuild that architecture from a ``BertConfig`` so
nothing is downloaded and the parameter-tensor count (201 for bert-base) can be checked. torch and
transformers are imported inside the functions so importing this module costs nothing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from incidents.errors import ReproUnavailable
from incidents.tools.repro.modes import InvalidReproArgument

REPRO_EXTRA_HINT = "install the repro extra: pip install 'hourtab[repro]' (torch, transformers, nvidia-ml-py)"


@dataclass(frozen=True)
class ModelSpec:
    """Architecture and batch shape; defaults are bert-base-uncased dimensions."""

    layers: int = 12
    hidden: int = 768
    heads: int = 12
    intermediate: int = 3072
    seq_len: int = 128
    batch_size: int = 2
    num_labels: int = 14
    vocab_size: int = 30522

    def with_overrides(self, **overrides: int | None) -> ModelSpec:
        """A copy with every non-None override applied (CLI flags left unset change nothing)."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    @property
    def expected_parameter_tensors(self) -> int:
        """Named parameter tensors BertForSequenceClassification has for this depth.

        Embeddings 5 (word, position, token type, LayerNorm weight and bias), 16 per encoder layer
        (Q, K, V, attention output, intermediate, output: weight+bias each, and two LayerNorms),
        pooler 2 and classifier 2: 9 + 16 × layers, so 201 for 12 layers.
        """
        return 9 + 16 * self.layers

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


PRESETS: dict[str, ModelSpec] = {
    "bert-base": ModelSpec(),
    "tiny": ModelSpec(layers=2, hidden=128, heads=2, intermediate=512),
}


class ModelMismatch(ReproUnavailable):
    """The built model does not have the parameter tensors its spec implies (a transformers change)."""


def require_torch() -> tuple[Any, Any]:
    """Import torch and transformers, or explain which extra to install."""
    try:
        import torch  # noqa: PLC0415 -- torch only inside the reproducer (the tools fence)
        import transformers  # noqa: PLC0415 -- transformers only inside the reproducer
    except ImportError as e:
        raise ReproUnavailable(f"The reproducer needs torch and transformers ({e}); {REPRO_EXTRA_HINT}.") from e
    return torch, transformers


def validate_spec(spec: ModelSpec) -> None:
    """Refuse shapes BERT cannot take before spending time building anything."""
    for field, value in spec.to_dict().items():
        if value < 1:
            raise InvalidReproArgument(f"--{field.replace('_', '-')} must be positive, not {value}.")
    if spec.hidden % spec.heads:
        raise InvalidReproArgument(f"--hidden ({spec.hidden}) must be a multiple of --heads ({spec.heads}).")
    if spec.seq_len > 512:
        raise InvalidReproArgument(f"--seq-len {spec.seq_len} exceeds BERT's 512 positions.")
    if spec.num_labels < 2:
        raise InvalidReproArgument("--num-labels must be at least 2 (classification with cross-entropy).")


def build_model(spec: ModelSpec, seed: int, device: str | None = None) -> Any:
    """A freshly initialised BertForSequenceClassification; the same seed gives the same weights.

    ``device="meta"`` builds the architecture without allocating or initialising weights, which is
    how the 201-tensor check of bert-base stays cheap in tests.
    """
    torch, transformers = require_torch()
    config = transformers.BertConfig(
        vocab_size=spec.vocab_size,
        hidden_size=spec.hidden,
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        intermediate_size=spec.intermediate,
        num_labels=spec.num_labels,  # in the config: transformers 5 rejects it beside one
    )
    torch.manual_seed(seed)
    if device is None:
        model = transformers.BertForSequenceClassification(config)
    else:
        with torch.device(device):
            model = transformers.BertForSequenceClassification(config)
    tensors = sum(1 for _ in model.named_parameters())
    if tensors != spec.expected_parameter_tensors:
        raise ModelMismatch(f"BertForSequenceClassification with {spec.layers} layers has {tensors} parameter "
                            f"tensors, expected {spec.expected_parameter_tensors}; transformers "
                            f"{transformers.__version__} changed the architecture.")
    return model


def describe_model(model: Any, spec: ModelSpec, preset: str | None) -> dict[str, Any]:
    """What profile.json records about the model: spec, tensor and parameter counts."""
    params = list(model.parameters())
    return {
        "name": "BertForSequenceClassification",
        "preset": preset,
        **spec.to_dict(),
        "parameter_tensors": len(params),
        "expected_parameter_tensors": spec.expected_parameter_tensors,
        "parameters": sum(p.numel() for p in params),
    }


def synthetic_batches(spec: ModelSpec, seed: int, count: int, device: str) -> list[dict[str, Any]]:
    """``count`` token batches drawn from a fixed seed, so every mode trains on identical data."""
    torch, _ = require_torch()
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(count):
        shape = (spec.batch_size, spec.seq_len)
        batches.append({
            "input_ids": torch.randint(0, spec.vocab_size, shape, generator=generator).to(device),
            "attention_mask": torch.ones(shape, dtype=torch.long).to(device),
            "token_type_ids": torch.zeros(shape, dtype=torch.long).to(device),
            "labels": torch.randint(0, spec.num_labels, (spec.batch_size,), generator=generator).to(device),
        })
    return batches
