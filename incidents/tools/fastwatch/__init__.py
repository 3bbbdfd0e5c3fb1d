"""A low-overhead ``wandb.watch``: the same histograms for every tensor, at close to one read of each.

``wandb.watch(model, log="all", log_freq=1)`` more than doubles a BERT-base step on a CPU because it
works per tensor: a clone, two ``isfinite`` passes, ``min().item()``/``max().item()`` (host syncs on a
GPU), ``torch.histc`` (several times an ``aminmax`` pass on CPU), a host copy of every parameter, and one message
to the W&B service per tensor. ``watch`` here logs the same keys (``gradients/<name>``,
``parameters/<name>``) with the same ``wandb.Histogram`` (64 bins from min to max) and does, per
tensor and logging step, one ``torch.aminmax`` pass plus one fused histogram pass (numba on CPU;
batched ``histc`` with one host sync and one small copy on CUDA), and hands the ``wandb.log`` call to
a background thread. Design, semantics and limits: ``docs/fastwatch.md``.

This module imports neither torch nor numba: the work lives in ``incidents.tools.fastwatch.watching`` and
is imported by :func:`watch`, so the web app can import ``incidents`` without the repro extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from incidents.tools.fastwatch.errors import FastWatchError

if TYPE_CHECKING:
    from incidents.tools.fastwatch.watching import FastWatch

LOG_CHOICES = ("gradients", "parameters", "all")

__all__ = ["LOG_CHOICES", "FastWatchError", "unwatch", "watch"]


def watch(model: Any, log: str = "gradients", log_freq: int = 1000, run: Any = None) -> FastWatch:
    """Log histograms of ``model``'s gradients and/or parameters every ``log_freq`` backward passes.

    Same arguments and output keys as ``wandb.watch``; ``run`` defaults to ``wandb.run``. Returns the
    :class:`~incidents.tools.fastwatch.watching.FastWatch` handle (``hook_seconds``, ``flush()``, counters).
    """
    from incidents.tools.fastwatch import watching  # noqa: PLC0415 -- the light entry point: watching imports torch and wandb

    return watching.watch(model, log=log, log_freq=log_freq, run=run)


def unwatch(model: Any = None) -> None:
    """Flush and remove the watch on ``model`` (every watch when ``model`` is None)."""
    from incidents.tools.fastwatch import watching  # noqa: PLC0415 -- the light entry point: watching imports torch and wandb

    watching.unwatch(model)
