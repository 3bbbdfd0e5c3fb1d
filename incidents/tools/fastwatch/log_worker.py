"""The thread that turns summaries into ``wandb.Histogram`` objects and calls ``run.log``.

Building 402 histograms and serialising them for the W&B service is milliseconds of Python per
logging step; here it runs beside training instead of inside the backward pass. The queue is bounded
(``MAX_PENDING`` logging steps): when W&B falls behind, the training thread waits (that wait is in
``hook_seconds``) rather than dropping histograms or growing memory without limit.
"""

from __future__ import annotations

import queue
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from incidents.tools.fastwatch.summary import TensorSummary, to_wandb

MAX_PENDING = 4
_STOP = object()


@dataclass
class Step:
    """One logging step's payload: the pass number, its summaries, and a batch still on the device."""

    number: int
    summaries: list[TensorSummary]
    pending: list[Any]
    kinds: tuple[str, ...]


def step_payload(step: Step, summaries: list[TensorSummary]) -> dict[str, Any]:
    """The ``run.log`` dict: histograms under wandb's keys, non-finite counts under ``fastwatch/``."""
    data: dict[str, Any] = {"fastwatch/step": step.number}
    totals = dict.fromkeys(step.kinds, 0)
    for s in summaries:
        kind, _, name = s.key.partition("/")
        totals[kind] = totals.get(kind, 0) + s.nonfinite
        if s.nan:
            data[f"fastwatch/nan/{kind}/{name}"] = s.nan
        if s.inf:
            data[f"fastwatch/inf/{kind}/{name}"] = s.inf
        if s.has_histogram:
            data[s.key] = to_wandb(s)
    for kind, total in totals.items():
        data[f"fastwatch/nonfinite/{kind}"] = total
    return data


class LogWorker:
    """A daemon thread logging queued steps to ``run`` with ``commit=False``, as wandb.watch does."""

    def __init__(self, run: Any, on_logged: Callable[[int, list[TensorSummary]], None]) -> None:
        self._run = run
        self._on_logged = on_logged
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=MAX_PENDING)
        self.cpu_seconds = 0.0
        self.errors: list[str] = []
        self._thread = threading.Thread(target=self._loop, name="hourtab-fastwatch", daemon=True)
        self._thread.start()

    def submit(self, step: Step) -> None:
        """Queue a step; blocks while ``MAX_PENDING`` steps are waiting."""
        if self._thread.is_alive():
            self._queue.put(step)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued step has been handed to W&B; False on timeout."""
        if threading.current_thread() is self._thread or not self._thread.is_alive():
            return True
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._queue.all_tasks_done.wait(remaining)
        return True

    def stop(self, wait: bool = True) -> None:
        """Log what is queued, then end the thread (``wait=False`` from finalizers: no join)."""
        if not self._thread.is_alive():
            return
        if wait and threading.current_thread() is not self._thread:
            self._queue.put(_STOP)
            self._thread.join()
        else:
            try:
                self._queue.put_nowait(_STOP)
            except queue.Full:
                threading.Thread(target=self._queue.put, args=(_STOP,), daemon=True).start()

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is _STOP:
                    return
                self._log(item)
            finally:
                self._queue.task_done()

    def _log(self, step: Step) -> None:
        started = time.thread_time()
        try:
            summaries = list(step.summaries)
            for batch in step.pending:
                summaries.extend(batch.wait())
            self._run.log(step_payload(step, summaries), commit=False)
            self._on_logged(step.number, summaries)
        except Exception as e:  # a finished run or a W&B failure must not kill training: report it
            self.errors.append(f"step {step.number}: {type(e).__name__}: {e}")
            if len(self.errors) == 1:
                warnings.warn(f"fastwatch could not log step {step.number} to W&B: {e}", RuntimeWarning,
                              stacklevel=1)
        finally:
            self.cpu_seconds += time.thread_time() - started
