"""One callback per backward pass over a model's parameters, without holding their gradients.

Why not ``torch.autograd.graph.register_multi_grad_hook``: it keeps every gradient of the pass in a
buffer until the last one arrives, and while a hook holds a reference ``AccumulateGrad`` cannot steal
the fresh gradient into ``.grad`` and copies it instead — on every backward pass, logging or not
(``tests/incidents/test_fastwatch.py`` checks it). Why not an
optimizer step pre-hook: ``watch`` gets no optimizer, and it would see ``.grad`` accumulated over
micro-batches where ``wandb.watch`` logs each backward pass's own gradient.

So: one small tensor hook per trainable parameter (what ``register_multi_grad_hook`` installs too).
The first to fire in a backward pass (keyed by autograd's graph-task id) counts the pass and queues
one end-of-pass callback with the autograd engine (``queue_callback``, as DDP does), which runs after
every ``.grad`` is written. On non-logging passes the tensor hooks return at once; on logging passes
each hands its gradient to ``on_grad``, which decides whether to summarise it now (CPU) or keep it
for one batched summary at the end of the pass (GPU).

Counting is by backward passes that reach the model's parameters: ``torch.no_grad`` evaluation, or
any forward without a backward, is not counted. A reentrant checkpointed segment
(``torch.utils.checkpoint(use_reentrant=True)``) runs its own nested backward and would be counted
as its own pass; the non-reentrant default is counted once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch

MAX_OPEN_PASSES = 8


@dataclass
class Pass:
    """One backward pass: its number (1-based) and, when it logs, what the hooks collected."""

    number: int
    logging: bool
    grads: dict[int, Any] = field(default_factory=dict)
    summaries: list[Any] = field(default_factory=list)


class BackwardPasses:
    """Tensor hooks on ``params`` that call ``on_grad`` and ``on_end`` for every ``log_freq``-th pass."""

    def __init__(self, params: list[Any], log_freq: int,
                 on_grad: Callable[[Pass, int, Any], None], on_end: Callable[[Pass], None]) -> None:
        self.count = 0
        self.seconds = 0.0
        self._log_freq = log_freq
        self._on_grad = on_grad
        self._on_end = on_end
        self._lock = threading.Lock()
        self._open: dict[int, Pass] = {}
        self._handles = [p.register_hook(partial(self._tensor_hook, i)) for i, p in enumerate(params)]

    def remove(self) -> None:
        """Remove every tensor hook; a pass in flight still ends (its callback is already queued)."""
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _tensor_hook(self, index: int, grad: Any) -> None:
        started = time.perf_counter()
        task = torch._C._current_graph_task_id()
        current = self._open.get(task)
        if current is None:
            with self._lock:
                current = self._open.get(task)
                if current is None:
                    self._drop_abandoned()
                    self.count += 1
                    current = Pass(self.count, self.count % self._log_freq == 0)
                    self._open[task] = current
                    torch.autograd.Variable._execution_engine.queue_callback(partial(self._pass_end, task))
        if current.logging:
            self._on_grad(current, index, grad)
        self.seconds += time.perf_counter() - started

    def _drop_abandoned(self) -> None:
        """Forget passes whose end never came (a backward that raised): they would hold gradients.

        Graph-task ids increase, so the oldest open passes are the abandoned ones; a few concurrent
        backward passes in other threads stay well under the limit.
        """
        while len(self._open) >= MAX_OPEN_PASSES:
            del self._open[min(self._open)]

    def _pass_end(self, task: int) -> None:
        started = time.perf_counter()
        with self._lock:
            finished = self._open.pop(task, None)
        if finished is not None and finished.logging:
            self._on_end(finished)
        self.seconds += time.perf_counter() - started
