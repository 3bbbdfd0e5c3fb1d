"""One tensor's histogram as ``wandb.watch`` would log it, and its conversion to ``wandb.Histogram``.

The semantics are ``wandb.integration.torch.wandb_torch.TorchHistory.log_tensor_stats`` (wandb 0.31):
flatten; sparse tensors are coalesced and their implicit zeros added to the bin holding 0 (the range
is stretched to include 0); values other than float32/float64 are converted to float32; non-finite
values are dropped; a tensor with nothing finite (or nothing at all) logs no histogram; the range is
the finite min..max; when min == max the histogram is one bin ``[n]`` with edges ``[min, max]``;
otherwise ``histc`` with 64 bins and edges ``torch.linspace(min, max, 65)``.

Two deliberate differences, both about counts wandb cannot represent: wandb counts in float32 (its
``histc`` accumulates in the input dtype), so a bin above 2**24 = 16,777,216 elements saturates or
rounds; on CPU we count in int64 and log the exact count (as a float, as wandb does; on CUDA we run
the same CUDA ``histc`` as wandb, float32 counting included). And we report the
non-finite values wandb drops silently (``nan``/``inf`` here, logged under ``fastwatch/``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

NUM_BINS = 64


@dataclass(frozen=True)
class TensorSummary:
    """What one tensor contributes to a logging step.

    ``lo``/``hi`` are None when the tensor had no finite value (wandb logs nothing for it);
    ``counts`` is None when ``lo == hi`` (wandb's single-bin case, ``finite`` elements in it).
    """

    key: str
    lo: float | None
    hi: float | None
    finite: int
    counts: np.ndarray | None
    nan: int = 0
    inf: int = 0
    sparse_zeros: int = 0

    @property
    def nonfinite(self) -> int:
        return self.nan + self.inf

    @property
    def has_histogram(self) -> bool:
        return self.lo is not None


def histogram_lists(summary: TensorSummary) -> tuple[list[float], list[float]]:
    """``(values, bins)`` exactly as wandb passes them to ``wandb.Histogram(np_histogram=...)``.

    Edges come from the same torch calls wandb makes (``linspace`` / ``torch.Tensor``, default
    dtype), so they are bit-identical; counts are exact (see the module docstring).
    """
    import torch  # noqa: PLC0415 -- torch only where a watch runs (the tools fence)

    if summary.lo is None or summary.hi is None:
        raise ValueError(f"{summary.key} has no finite values, so no histogram")
    if summary.counts is None:
        values = [float(summary.finite)]
        bins = torch.Tensor([summary.lo, summary.hi]).tolist()
    else:
        values = summary.counts.astype(np.float64).tolist()
        bins = torch.linspace(summary.lo, summary.hi, steps=NUM_BINS + 1).tolist()
    if summary.sparse_zeros:
        values[_zero_bin(bins)] += float(summary.sparse_zeros)
    return values, bins


def _zero_bin(bins: list[float]) -> int:
    """The bin wandb adds a sparse tensor's implicit zeros to (its loop, on float32 edges)."""
    edges = np.asarray(bins, dtype=np.float32)
    last = len(edges) - 2
    for i in range(last + 1):
        start, end = edges[i], edges[i + 1]
        if (start <= 0 and end > 0) or (i == last and end == 0):
            return i
    return 0


def to_wandb(summary: TensorSummary) -> Any:
    """The ``wandb.Histogram`` for a summary that has one."""
    import wandb  # noqa: PLC0415 -- wandb is the slowest import here, and only a live run needs it

    counts, edges = histogram_lists(summary)
    return wandb.Histogram(np_histogram=(np.asarray(counts), np.asarray(edges)))
