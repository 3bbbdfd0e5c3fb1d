"""One callback per backward pass over a model's parameters, without holding their gradients.

Three kinds of public autograd hook, all removed together:

- ``torch.autograd.graph.register_multi_grad_hook(params, start, mode="any")`` fires once per
  backward pass, at the first gradient that reaches any parameter: it counts the pass and decides
  whether it logs. (The ``"all"`` mode is not used: it keeps every gradient of the pass in a buffer
  until the last one arrives, and while a hook holds a gradient ``AccumulateGrad`` cannot move it
  into ``.grad`` and copies it instead — on every pass, logging or not;
  ``tests/incidents/test_fastwatch.py`` checks it.)
- ``Tensor.register_hook`` on each parameter (only when gradients are logged) hands that pass's own
  gradient to ``on_grad`` on logging passes — the micro-batch's gradient, not the accumulated
  ``.grad``, as ``wandb.watch`` logs. On other passes it returns at once.
- ``Tensor.register_post_accumulate_grad_hook`` on each parameter counts the ``.grad`` writes; after
  the last parameter's, every ``.grad`` is written and the pass ends (``on_end``).

A pass in which some parameter gets no gradient (an unused layer, a backward that raised half-way, a
``torch.autograd.grad`` call) ends when the next pass starts, or on ``flush()``/``unwatch``; what it
collected is logged then, as wandb.watch would have logged those gradients. Backward passes are taken
to run one at a time for a model, as in a training loop (concurrent backward passes through the same
model from several threads are not supported). A reentrant checkpointed segment
(``torch.utils.checkpoint(use_reentrant=True)``) runs its own nested backward and is counted as its
own pass; the non-reentrant default is counted once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch


@dataclass
class Pass:
    """One backward pass: its number (1-based) and, when it logs, what the hooks collected."""

    number: int
    logging: bool
    grads: dict[int, Any] = field(default_factory=dict)
    summaries: list[Any] = field(default_factory=list)
    accumulated: int = 0


class BackwardPasses:
    """Hooks on ``params`` that call ``on_grad`` and ``on_end`` for every ``log_freq``-th pass."""

    def __init__(self, params: list[Any], log_freq: int, on_grad: Callable[[Pass, int, Any], None] | None,
                 on_end: Callable[[Pass], None]) -> None:
        self.count = 0
        self.seconds = 0.0
        self.current: Pass | None = None
        self._size = len(params)
        self._log_freq = log_freq
        self._on_grad = on_grad
        self._on_end = on_end
        self._lock = threading.Lock()
        self._handles: list[Any] = [torch.autograd.graph.register_multi_grad_hook(params, self._start, mode="any")]
        if on_grad is not None:  # registered after the start hook, so the pass exists when they run
            self._handles += [p.register_hook(partial(self._grad_hook, i)) for i, p in enumerate(params)]
        self._handles += [p.register_post_accumulate_grad_hook(self._accumulated) for p in params]

    def remove(self) -> None:
        """Remove every hook; a pass still open is dropped (``end_open`` first to keep it)."""
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self.current = None

    def end_open(self) -> None:
        """End the pass still open (one whose parameters did not all get a gradient)."""
        with self._lock:
            finished, self.current = self.current, None
        if finished is not None:
            self._end(finished)

    def _start(self, _grad: Any) -> None:
        started = time.perf_counter()
        self.end_open()
        with self._lock:
            self.count += 1
            self.current = Pass(self.count, self.count % self._log_freq == 0)
        self.seconds += time.perf_counter() - started

    def _grad_hook(self, index: int, grad: Any) -> None:
        current = self.current
        if current is not None and current.logging and self._on_grad is not None:
            started = time.perf_counter()
            self._on_grad(current, index, grad)
            self.seconds += time.perf_counter() - started

    def _accumulated(self, _param: Any) -> None:
        started = time.perf_counter()
        with self._lock:
            current = self.current
            if current is None:
                return
            current.accumulated += 1
            if current.accumulated < self._size:
                current = None
            else:
                self.current = None
        if current is not None:
            self._end(current)
        self.seconds += time.perf_counter() - started

    def _end(self, finished: Pass) -> None:
        if finished.logging:
            self._on_end(finished)
