"""``watch``/``unwatch`` and the :class:`FastWatch` handle: attaching, timing and detaching safely.

A watch is removed by ``unwatch(model)``, by ``handle.remove()``, when the W&B run finishes (a run
teardown hook flushes and detaches first, so nothing logs into a finished run) and when the model is
garbage-collected (a ``weakref.finalize`` on the model removes the hooks; the handle keeps no
reference to the model itself).
"""

from __future__ import annotations

import threading
import warnings
import weakref
from typing import Any

import torch

from incidents.tools.fastwatch import LOG_CHOICES, kernels
from incidents.tools.fastwatch.errors import FastWatchError
from incidents.tools.fastwatch.log_worker import LogWorker, Step
from incidents.tools.fastwatch.passes import BackwardPasses, Pass
from incidents.tools.fastwatch.summary import TensorSummary

_WATCHES: dict[int, FastWatch] = {}
_LOCK = threading.Lock()


class FastWatch:
    """A live watch on one model. Counters are cumulative and stay readable after removal.

    ``hook_seconds``: wall time spent inside our hooks on the thread running backward (every tensor
    hook, logging or not, and the end-of-pass work, including any wait for a full logging queue).
    ``worker_seconds``: CPU time of the logging thread. ``passes``: backward passes counted.
    ``logging_steps``/``histograms_logged``: steps queued / histograms handed to W&B.
    ``nonfinite``: NaN+inf values seen per kind (``gradients``, ``parameters``) over all logged steps.
    ``last_step``: ``(pass number, {key: TensorSummary})`` of the latest step handed to W&B.
    """

    def __init__(self, model: Any, log: str, log_freq: int, run: Any) -> None:
        self.log = log
        self.log_freq = log_freq
        self.backend = kernels.backend()
        self.logging_steps = 0
        self.histograms_logged = 0
        self.nonfinite: dict[str, int] = {}
        self.last_step: tuple[int, dict[str, TensorSummary]] | None = None
        self._errors: list[str] = []
        self._closed = False
        self._removed = False
        self._finalizer: weakref.finalize | None = None
        self._want_grads = log in ("gradients", "all")
        named = list(model.named_parameters())
        trainable = [(n, p) for n, p in named if p.requires_grad]
        if not trainable:
            raise FastWatchError("fastwatch counts training steps by backward passes, and this model has "
                                 "no parameter with requires_grad=True.")
        self._grad_keys = [f"gradients/{n}" for n, _ in trainable]
        self._params = [(f"parameters/{n}", p) for n, p in named] if log in ("parameters", "all") else []
        self._kinds = (("gradients",) if self._want_grads else ()) + (("parameters",) if self._params else ())
        self._worker = LogWorker(run, self._logged)
        self._passes = BackwardPasses([p for _, p in trainable], log_freq,
                                      self._on_grad if self._want_grads else None, self._on_end)

    @property
    def hook_seconds(self) -> float:
        return self._passes.seconds

    @property
    def passes(self) -> int:
        return self._passes.count

    @property
    def worker_seconds(self) -> float:
        return self._worker.cpu_seconds

    @property
    def errors(self) -> list[str]:
        """What went wrong in our hooks or while logging (each also warned once)."""
        return self._errors + self._worker.errors

    @property
    def active(self) -> bool:
        return not self._closed

    def flush(self, timeout: float | None = None) -> bool:
        """Block until every histogram computed so far has been handed to ``run.log``."""
        self._passes.end_open()
        return self._worker.flush(timeout)

    def remove(self) -> None:
        """Flush, remove the hooks and end the logging thread (what ``unwatch(model)`` does)."""
        with _LOCK:
            for key, handle in list(_WATCHES.items()):
                if handle is self:
                    del _WATCHES[key]
        self._close(wait=True)

    def _close(self, wait: bool) -> None:
        if self._removed:
            return
        if wait and not self._closed:
            self._passes.end_open()
        self._removed = self._closed = True
        self._passes.remove()
        if self._finalizer is not None:
            self._finalizer.detach()
        self._worker.stop(wait=wait)

    def _logged(self, number: int, summaries: list[TensorSummary]) -> None:
        self.last_step = (number, {s.key: s for s in summaries})
        self.histograms_logged += sum(1 for s in summaries if s.has_histogram)
        for s in summaries:
            kind = s.key.partition("/")[0]
            self.nonfinite[kind] = self.nonfinite.get(kind, 0) + s.nonfinite

    def _on_grad(self, current: Pass, index: int, grad: Any) -> None:
        if not self._want_grads or self._closed:
            return
        if grad.device.type == "cpu":
            with torch.profiler.record_function("hourtab.fastwatch.gradient"):
                self._guard(lambda: current.summaries.append(kernels.summarise_cpu(self._grad_keys[index], grad)))
        else:
            current.grads[index] = grad  # summarised with the rest of the device batch at the pass end

    def _on_end(self, current: Pass) -> None:
        if self._closed:
            return
        with torch.profiler.record_function("hourtab.fastwatch.step"):
            self._guard(lambda: self._finish_pass(current))

    def _finish_pass(self, current: Pass) -> None:
        summaries = list(current.summaries)
        by_device: dict[Any, list[tuple[str, Any]]] = {}
        for index, grad in current.grads.items():
            by_device.setdefault(grad.device, []).append((self._grad_keys[index], grad))
        for key, param in self._params:
            if param.device.type == "cpu":
                summaries.append(kernels.summarise_cpu(key, param))
            else:
                by_device.setdefault(param.device, []).append((key, param))
        pending = [kernels.summarise_device(items) for items in by_device.values()]
        current.grads.clear()
        self.logging_steps += 1
        self._worker.submit(Step(current.number, summaries, pending, self._kinds))

    def _guard(self, work: Any) -> None:
        """Run hook work; a failure is reported and stops the watch rather than breaking training.

        The hooks stay (doing nothing) until ``unwatch``: autograd may be iterating them now.
        """
        try:
            work()
        except Exception as e:
            self._errors.append(f"{type(e).__name__}: {e}")
            warnings.warn(f"fastwatch stopped watching after an error in its hook: {e}", RuntimeWarning,
                          stacklevel=2)
            self._closed = True


def _collected(key: int, handle: FastWatch) -> None:
    """The model was garbage-collected: drop its hooks (no waiting: finalizers run anywhere)."""
    with _LOCK:
        if _WATCHES.get(key) is handle:
            del _WATCHES[key]
    handle._close(wait=False)


def _attach_to_run_teardown(run: Any, handle: FastWatch) -> None:
    """Flush and detach when the run finishes, before the run stops accepting ``log`` calls."""
    try:
        from wandb.sdk.wandb_run import TeardownHook, TeardownStage  # noqa: PLC0415 -- wandb is the slowest import here, and only a live run needs it

        run._teardown_hooks.append(TeardownHook(handle.remove, TeardownStage.EARLY))
    except (ImportError, AttributeError):
        warnings.warn("this wandb has no run teardown hooks: call fastwatch.unwatch(model) before "
                      "run.finish() so the last histograms are logged", RuntimeWarning, stacklevel=3)


def watch(model: Any, log: str = "gradients", log_freq: int = 1000, run: Any = None) -> FastWatch:
    """See :func:`incidents.tools.fastwatch.watch`."""
    if not isinstance(model, torch.nn.Module):
        raise FastWatchError(f"fastwatch watches a torch.nn.Module, not {type(model).__name__}.")
    if log not in LOG_CHOICES:
        raise FastWatchError(f"log must be one of {', '.join(LOG_CHOICES)}; got {log!r}.")
    if isinstance(log_freq, bool) or not isinstance(log_freq, int) or log_freq < 1:
        raise FastWatchError(f"log_freq must be a positive integer (backward passes); got {log_freq!r}.")
    if run is None:
        import wandb  # noqa: PLC0415 -- wandb is the slowest import here, and only a live run needs it

        run = wandb.run
        if run is None:
            raise FastWatchError("No W&B run: call wandb.init() before fastwatch.watch, or pass run=.")
    with _LOCK:
        if id(model) in _WATCHES:
            raise FastWatchError("This model is already watched by fastwatch; call unwatch(model) first.")
    kernels.warm_up()
    handle = FastWatch(model, log, log_freq, run)
    with _LOCK:
        _WATCHES[id(model)] = handle
    handle._finalizer = weakref.finalize(model, _collected, id(model), handle)
    _attach_to_run_teardown(run, handle)
    return handle


def unwatch(model: Any = None) -> None:
    """See :func:`incidents.tools.fastwatch.unwatch`."""
    with _LOCK:
        if model is None:
            handles = list(_WATCHES.values())
            _WATCHES.clear()
        else:
            handles = [h for h in [_WATCHES.pop(id(model), None)] if h is not None]
    if model is not None and not handles:
        warnings.warn("fastwatch.unwatch: this model is not watched", RuntimeWarning, stacklevel=2)
    for handle in handles:
        handle._close(wait=True)


def watched() -> list[FastWatch]:
    """The live watches (for tests and diagnostics)."""
    with _LOCK:
        return list(_WATCHES.values())
