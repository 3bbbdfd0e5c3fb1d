"""Computing :class:`TensorSummary` values: per tensor on CPU, batched with one host sync on a GPU.

Why a numba kernel on CPU: ``torch.histc``'s CPU kernel is generic N-dimensional histogram code and
costs many times a ``torch.aminmax`` pass per value (``bench/watch_overhead.py`` prints both, in CPU
nanoseconds per value); over BERT-base's 219 M parameter and gradient values it is the largest part of
wandb.watch's cost. The kernel below applies ``histc``'s own arithmetic — ``bin = int((x - lo) * 64 /
(hi - lo))`` in the input's dtype, the top edge folded into bin 63
(``aten/src/ATen/native/cpu/HistogramKernel.cpp``, LINEAR_INTERPOLATION) — so the counts are the
same, but vectorised in blocks, counting pairs of bins in a 64×64 table (half the scattered
increments). Without numba we fall back to ``torch.histc``.

Why per tensor on CPU but batched on a GPU: on CPU nothing is asynchronous, so a "sync" costs nothing
and summarising each gradient as soon as autograd produces it reads it while it is still in cache. On
a GPU, ``histc`` needs the range on the host, so we launch every tensor's ``aminmax`` first, copy the
N×2 result to the host once, launch every ``histc`` (the same CUDA kernel wandb uses, so the same
counts) into one buffer, and copy that N×64 buffer once, non-blocking into pinned memory; the logging
thread waits on a CUDA event, not the training thread.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from incidents.tools.fastwatch.summary import NUM_BINS, TensorSummary

_EXACT_DTYPES = (torch.float32, torch.float64)
_PAIR_BLOCK = 1024
_MIN_PART = 1 << 20  # values per thread below which splitting a tensor costs more than it saves
_pool: ThreadPoolExecutor | None = None

def _pair_histogram(x: np.ndarray, lo: Any, hi: Any, table: np.ndarray, out: np.ndarray) -> None:
    """Count ``x`` into 64 ``histc`` bins of ``[lo, hi]``; every value must be finite and in range.

    Each block computes the bins of two half-blocks with vector arithmetic and counts each pair once
    in a 64×64 table (one scattered increment per two values, spread over more counters so repeats of
    the same bin stall less); row and column sums give the counts.
    """
    w = hi - lo
    k = x.dtype.type(NUM_BINS)
    top = x.dtype.type(NUM_BINS - 1)
    n = x.shape[0]
    half = _PAIR_BLOCK
    pairs = np.empty(half, np.int32)
    s = 0
    while s + 2 * half <= n:
        for i in range(half):
            a = np.int32(min((x[s + i] - lo) * k / w, top))
            b = np.int32(min((x[s + half + i] - lo) * k / w, top))
            pairs[i] = a * NUM_BINS + b
        for i in range(half):
            table[pairs[i]] += 1
        s += 2 * half
    for i in range(s, n):
        out[np.int32(min((x[i] - lo) * k / w, top))] += 1
    for first in range(NUM_BINS):
        for second in range(NUM_BINS):
            c = table[first * NUM_BINS + second]
            out[first] += c
            out[second] += c


def _compiled_pair_kernel() -> Callable[..., None] | None:
    """``_pair_histogram`` compiled by numba, or None without it."""
    try:
        from numba import njit  # noqa: PLC0415 -- optional: only where the repro extra is installed
    except ImportError:  # the kernel is optional: torch.histc gives the same bins, slowly
        return None
    return njit(nogil=True, cache=True, boundscheck=False, error_model="numpy")(_pair_histogram)


_pair_kernel = _compiled_pair_kernel()


def backend() -> str:
    """Which CPU histogram runs: ``numba`` (fast) or ``torch.histc`` (fallback, same bins)."""
    return "numba" if _pair_kernel is not None else "torch.histc"


def warm_up() -> None:
    """Compile (or load from numba's cache) the float32 kernel now, not on the first logging step."""
    if _pair_kernel is not None:
        x = np.linspace(-1.0, 1.0, 2 * _PAIR_BLOCK + 3, dtype=np.float32)
        histogram_cpu(torch.from_numpy(x), -1.0, 1.0)


def prepare_tensor(tensor: Any) -> tuple[Any, int]:
    """The flat values wandb histograms (float32 unless float64) and a sparse tensor's implicit zeros."""
    t = tensor.detach()
    sparse_zeros = 0
    if t.is_sparse:
        t = t.coalesce()
        values = t._values()
        sparse_zeros = t.numel() - values.numel()
        t = values
    flat = t.reshape(-1)
    if flat.dtype not in _EXACT_DTYPES:
        flat = flat.float()
    return flat, sparse_zeros


def histogram_cpu(flat: Any, lo: float, hi: float) -> np.ndarray:
    """int64 counts of ``histc(flat, 64, lo, hi)`` for a CPU tensor of finite values within range."""
    width = hi - lo
    if _pair_kernel is not None and math.isfinite(width * NUM_BINS) and width > 0:
        x = flat.contiguous().numpy()
        parts = min(torch.get_num_threads(), x.shape[0] // _MIN_PART)
        if parts <= 1:
            return _count(x, lo, hi)
        # As many threads as torch uses for the training step itself (the kernel releases the GIL).
        chunks = np.array_split(x, parts)
        return np.sum(list(_thread_pool().map(_count, chunks, [lo] * parts, [hi] * parts)), axis=0)
    return torch.histc(flat, bins=NUM_BINS, min=lo, max=hi).to(torch.int64).numpy()


def _count(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Counts by the compiled kernel: ``histogram_cpu`` calls this only when numba compiled it."""
    if _pair_kernel is None:
        raise RuntimeError("the numba histogram kernel is not available")
    scalar = x.dtype.type
    out = np.zeros(NUM_BINS, np.int64)
    _pair_kernel(x, scalar(lo), scalar(hi), np.zeros(NUM_BINS * NUM_BINS, np.int64), out)
    return out


def _thread_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="hourtab-fastwatch-hist")
    return _pool


def _finite_only(flat: Any) -> tuple[Any, int, int]:
    """The finite values, and how many NaN and infinite values were dropped (the rare, slow path)."""
    finite = torch.isfinite(flat)
    nan = int(torch.isnan(flat).sum())
    kept = flat[finite]
    return kept, nan, flat.numel() - kept.numel() - nan


def summarise_cpu(key: str, tensor: Any) -> TensorSummary:
    """Summarise one CPU tensor: one ``aminmax`` pass and one histogram pass in the common case."""
    flat, zeros = prepare_tensor(tensor)
    if flat.numel() == 0:
        return TensorSummary(key, None, None, 0, None, sparse_zeros=zeros)
    lo_t, hi_t = torch.aminmax(flat)
    lo, hi = lo_t.item(), hi_t.item()
    nan = inf = 0
    if not (math.isfinite(lo) and math.isfinite(hi)):  # aminmax propagates NaN and shows ±inf
        flat, nan, inf = _finite_only(flat)
        if flat.numel() == 0:
            return TensorSummary(key, None, None, 0, None, nan, inf, zeros)
        lo_t, hi_t = torch.aminmax(flat)
        lo, hi = lo_t.item(), hi_t.item()
    if zeros:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    counts = None if lo == hi else histogram_cpu(flat, lo, hi)
    return TensorSummary(key, lo, hi, flat.numel(), counts, nan, inf, zeros)


@dataclass
class PendingBatch:
    """Summaries whose counts are still on their way from the device (``wait`` returns them)."""

    rows: list[tuple[str, float | None, float | None, int, int | None, int, int, int]]
    counts: Any = None
    event: Any = None
    ready: list[TensorSummary] = field(default_factory=list)

    def wait(self) -> list[TensorSummary]:
        """Block until the counts copy is done (on the logging thread), then build the summaries."""
        if self.event is not None:
            self.event.synchronize()
        table = self.counts.numpy() if self.counts is not None else None
        out = list(self.ready)
        for key, lo, hi, finite, row, nan, inf, zeros in self.rows:
            counts = None if row is None or table is None else np.rint(table[row]).astype(np.int64)
            out.append(TensorSummary(key, lo, hi, finite, counts, nan, inf, zeros))
        return out


def summarise_device(items: list[tuple[str, Any]]) -> PendingBatch:
    """Summarise tensors on one device with one host sync and one small device-to-host copy.

    Used for CUDA; it runs on any device (tests run it on CPU, where ``histc`` gives the same bins).
    """
    prepared = [(key, *prepare_tensor(t)) for key, t in items]
    batch = PendingBatch(rows=[])
    live = [(key, flat, zeros) for key, flat, zeros in prepared if flat.numel() > 0]
    batch.ready.extend(TensorSummary(key, None, None, 0, None, sparse_zeros=zeros)
                       for key, flat, zeros in prepared if flat.numel() == 0)
    if not live:
        return batch
    device = live[0][1].device
    ranges = torch.empty((len(live), 2), dtype=torch.float64, device=device)
    for i, (_, flat, _) in enumerate(live):
        lo_t, hi_t = torch.aminmax(flat)
        ranges[i, 0], ranges[i, 1] = lo_t, hi_t  # device-side copies: no sync
    host_ranges = ranges.cpu().tolist()  # the one host synchronisation
    histograms: list[torch.Tensor] = []
    for (key, flat, zeros), (lo, hi) in zip(live, host_ranges, strict=True):
        nan = inf = 0
        if not (math.isfinite(lo) and math.isfinite(hi)):
            flat, nan, inf = _finite_only(flat)  # rare: non-finite values; this tensor syncs again
            if flat.numel() == 0:
                batch.ready.append(TensorSummary(key, None, None, 0, None, nan, inf, zeros))
                continue
            lo_t, hi_t = torch.aminmax(flat)
            lo, hi = lo_t.item(), hi_t.item()
        if zeros:
            lo, hi = min(lo, 0.0), max(hi, 0.0)
        row = None
        if lo != hi:
            row = len(histograms)
            histograms.append(torch.histc(flat, bins=NUM_BINS, min=lo, max=hi).to(torch.float64))
        batch.rows.append((key, lo, hi, flat.numel(), row, nan, inf, zeros))
    if histograms:
        stacked = torch.stack(histograms)
        if stacked.is_cuda:
            batch.counts = torch.empty(stacked.shape, dtype=stacked.dtype, pin_memory=True)
            batch.counts.copy_(stacked, non_blocking=True)
            batch.event = torch.cuda.Event()
            batch.event.record()
        else:
            batch.counts = stacked
    return batch
