"""What the reproducer measures during a step, and how, so the figures mean the same on CPU and CUDA.

- Step wall time with the device synchronised at the end of every step (on CUDA, queued kernels
  would otherwise make the step look free and the next one slow).
- Phase times (forward, backward, optimizer): host clock on CPU, where work is synchronous; CUDA
  events on a GPU. On CPU the *compute share* is (phase time − watch-hook time) ÷ step time: the part
  of the step spent on the model itself. It is never called GPU utilisation; on CUDA the device's
  own utilisation comes from NVML, sampled in a thread at ``NVML_HZ``.
- Watch-hook time: for ``wandb.watch`` we wrap the run's ``TorchHistory.log_tensor_stats`` (the
  per-tensor histogram work every watch hook ends in) with a host timer and a
  ``torch.profiler.record_function`` range, so a profile labels the work too; the parameters
  forward hook is timed whole because it copies each parameter to the host before that call. For
  ``fastwatch`` we read its handle's ``hook_seconds``.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

#: The record_function label around wandb's per-tensor work; profiler.py looks for it.
WATCH_RANGE = "wandb.watch.log_tensor_stats"
#: Labels the runner puts around the phases of each training step.
PHASE_RANGES = {"forward": "repro.forward", "backward": "repro.backward", "optimizer": "repro.optimizer"}
#: NVML sampling rate (the issue asks for at least 10 Hz).
NVML_HZ = 20.0


def step_time_stats(seconds: list[float]) -> dict[str, float | None]:
    """Mean, median and 90th percentile (linear interpolation) of per-step times, in seconds."""
    if not seconds:
        return {"mean_step_s": None, "median_step_s": None, "p90_step_s": None,
                "min_step_s": None, "max_step_s": None}
    ordered = sorted(seconds)
    rank = 0.9 * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    p90 = ordered[low] + (ordered[high] - ordered[low]) * (rank - low)
    return {"mean_step_s": statistics.fmean(ordered), "median_step_s": statistics.median(ordered),
            "p90_step_s": p90, "min_step_s": ordered[0], "max_step_s": ordered[-1]}


class StepClock:
    """Wall time and phase times of one step at a time.

    ``begin()``, then ``mark(phase)`` after each phase, then ``end()`` returns the synchronised wall
    seconds; ``phases()`` then gives that step's phase seconds.
    """

    def __init__(self, torch: Any, device: str) -> None:
        self._torch = torch
        self._cuda = device.startswith("cuda")
        self._start = 0.0
        self._last = 0.0
        self._phases: dict[str, float] = {}
        self._events: list[tuple[str, Any]] = []

    @property
    def timer(self) -> str:
        return "cuda-events" if self._cuda else "host-clock"

    def begin(self) -> None:
        self._phases = {}
        if self._cuda:
            self._torch.cuda.synchronize()
            start = self._torch.cuda.Event(enable_timing=True)
            start.record()
            self._events = [("start", start)]
        self._start = self._last = time.perf_counter()

    def mark(self, phase: str) -> None:
        if self._cuda:
            event = self._torch.cuda.Event(enable_timing=True)
            event.record()
            self._events.append((phase, event))
            return
        now = time.perf_counter()
        self._phases[phase] = now - self._last
        self._last = now

    def end(self) -> float:
        if self._cuda:
            self._torch.cuda.synchronize()
        wall = time.perf_counter() - self._start
        if self._cuda:
            for (_, before), (phase, after) in zip(self._events, self._events[1:], strict=False):
                self._phases[phase] = before.elapsed_time(after) / 1000.0
        return wall

    def phases(self) -> dict[str, float]:
        return dict(self._phases)


@dataclass
class TensorCost:
    name: str
    numel: int = 0
    calls: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "numel": self.numel, "calls": self.calls,
                "total_ms": self.seconds * 1000.0,
                "mean_ms": self.seconds * 1000.0 / self.calls if self.calls else 0.0}


@dataclass
class HookTimer:
    """Seconds spent in watch hooks on the training thread, and the histograms they logged.

    ``take()`` returns the hook seconds since the previous ``take()`` so the runner can attribute
    hook time to each step; per-tensor costs are only kept while ``measuring`` is set (warm-up is
    excluded), while ``calls`` counts every histogram logged (warm-up included: wandb's ``log_freq``
    counter runs through warm-up too).
    """

    measuring: bool = False
    calls: int = 0
    per_tensor: dict[str, TensorCost] = field(default_factory=dict)
    #: Training-thread CPU seconds inside the hooks while ``measuring`` (None: this timer cannot tell).
    cpu_seconds: float | None = None
    _pending: float = 0.0

    def add(self, seconds: float) -> None:
        self._pending += seconds

    def take(self) -> float:
        seconds, self._pending = self._pending, 0.0
        return seconds

    def top_tensors(self, limit: int = 10) -> list[dict[str, Any]]:
        ranked = sorted(self.per_tensor.values(), key=lambda c: c.seconds, reverse=True)
        return [c.to_dict() for c in ranked[:limit]]

    def close(self) -> None:
        """Undo any wrapping; the base timer wraps nothing."""


class WandbHookTimer(HookTimer):
    """Times wandb.watch's hooks by wrapping the run's TorchHistory (see the module docstring)."""

    def __init__(self, run: Any, model: Any, record_function: Callable[[str], Any], prefix: str = "") -> None:
        super().__init__()
        self.cpu_seconds = 0.0
        self._history = run._torch
        self._original = self._history.log_tensor_stats
        self._record_function = record_function
        self._in_forward_hook = False
        self._history.log_tensor_stats = self._timed_log_tensor_stats
        self._model = model
        self._forward_hook_id: int | None = None
        self._forward_hook: Callable[..., Any] | None = None
        handle = self._history._hook_handles.get("parameters/" + prefix)
        if handle is not None and handle.id in model._forward_hooks:
            # wandb registers a lambda we cannot reach otherwise; replacing the entry under the
            # same handle id keeps wandb's own unhook working.
            self._forward_hook_id = handle.id
            self._forward_hook = model._forward_hooks[handle.id]
            model._forward_hooks[handle.id] = self._timed_forward_hook

    def _timed_log_tensor_stats(self, tensor: Any, name: str) -> None:
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            with self._record_function(WATCH_RANGE):
                self._original(tensor, name)
        finally:
            elapsed = time.perf_counter() - start
            self.calls += 1
            if not self._in_forward_hook:
                self.add(elapsed)
                if self.measuring and self.cpu_seconds is not None:
                    self.cpu_seconds += time.thread_time() - cpu
            if self.measuring:
                cost = self.per_tensor.get(name)
                if cost is None:
                    cost = self.per_tensor[name] = TensorCost(name, numel=_numel(tensor))
                cost.calls += 1
                cost.seconds += elapsed

    def _timed_forward_hook(self, module: Any, inputs: Any, output: Any) -> Any:
        start, cpu = time.perf_counter(), time.thread_time()
        self._in_forward_hook = True
        try:
            if self._forward_hook is None:  # installed only in place of wandb's hook
                return None
            return self._forward_hook(module, inputs, output)
        finally:
            self._in_forward_hook = False
            self.add(time.perf_counter() - start)
            if self.measuring and self.cpu_seconds is not None:
                self.cpu_seconds += time.thread_time() - cpu

    def close(self) -> None:
        if self._history.__dict__.get("log_tensor_stats") is not None:
            del self._history.log_tensor_stats
        if self._forward_hook_id is not None and self._forward_hook_id in self._model._forward_hooks:
            self._model._forward_hooks[self._forward_hook_id] = self._forward_hook


class FastwatchHookTimer(HookTimer):
    """Reads ``hook_seconds`` from an ``incidents.tools.fastwatch`` handle (it times its own hooks)."""

    def __init__(self, handle: Any) -> None:
        super().__init__()
        self._handle = handle
        self._seen = float(getattr(handle, "hook_seconds", 0.0))

    def take(self) -> float:
        total = float(self._handle.hook_seconds)
        seconds, self._seen = total - self._seen, total
        return seconds

    def histograms_logged(self, timeout: float = 60.0) -> int | None:
        """Histograms handed to W&B so far, once its logging thread has caught up."""
        flush = getattr(self._handle, "flush", None)
        if flush is not None:
            flush(timeout)
        count = getattr(self._handle, "histograms_logged", None)
        return int(count) if count is not None else None

    def worker_seconds(self) -> float | None:
        """CPU time of fastwatch's background logging thread (it competes with training on a CPU)."""
        value = getattr(self._handle, "worker_seconds", None)
        return float(value) if value is not None else None


def _numel(tensor: Any) -> int:
    if isinstance(tensor, (list, tuple)):
        return sum(_numel(t) for t in tensor)
    return int(tensor.numel())


@dataclass
class NvmlSampler:
    """Samples the device's utilisation (percent of time a kernel ran) in a background thread."""

    device_index: int
    hz: float = NVML_HZ
    samples: list[tuple[float, int]] = field(default_factory=list)
    error: str | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _started: float = 0.0
    _stopped: float = 0.0

    def start(self) -> None:
        self.samples = []
        self._stop.clear()
        self._started = time.perf_counter()
        self._thread = threading.Thread(target=self._loop, name="hourtab-nvml", daemon=True)
        self._thread.start()

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._stopped = time.perf_counter()
        return self.summary()

    def summary(self) -> dict[str, Any]:
        duration = max(self._stopped - self._started, 1e-9)
        values = [u for _, u in self.samples]
        return {
            "source": "nvml",
            "mean_percent": statistics.fmean(values) if values else None,
            "median_percent": statistics.median(values) if values else None,
            "samples": len(values),
            "sampling_hz": len(values) / duration,
            "error": self.error,
        }

    def _loop(self) -> None:
        try:
            import pynvml  # noqa: PLC0415 -- the repro extra's NVML binding, absent without a GPU

            pynvml.nvmlInit()
            try:
                handle = _nvml_handle(pynvml, self.device_index)
                interval = 1.0 / self.hz
                next_at = time.perf_counter()
                while not self._stop.is_set():
                    util = pynvml.nvmlDeviceGetUtilizationRates(handle).gpu
                    self.samples.append((time.perf_counter(), int(util)))
                    next_at += interval
                    self._stop.wait(max(0.0, next_at - time.perf_counter()))
            finally:
                pynvml.nvmlShutdown()
        except Exception as e:  # NVML missing or refused: reported in profile.json, never fatal
            self.error = f"{type(e).__name__}: {e}"


def _nvml_handle(pynvml: Any, device_index: int) -> Any:
    """The NVML handle of torch's device ``device_index`` (by UUID, so CUDA_VISIBLE_DEVICES is honoured)."""
    import torch  # noqa: PLC0415 -- torch only inside the reproducer (the tools fence)

    uuid = getattr(torch.cuda.get_device_properties(device_index), "uuid", None)
    if uuid is not None:
        try:
            return pynvml.nvmlDeviceGetHandleByUUID(f"GPU-{uuid}")
        except pynvml.NVMLError:
            pass
    return pynvml.nvmlDeviceGetHandleByIndex(device_index)


@contextmanager
def sampling(sampler: NvmlSampler | None) -> Iterator[dict[str, Any]]:
    """Run ``sampler`` for the duration of the block; the yielded dict receives its summary."""
    result: dict[str, Any] = {}
    if sampler is None:
        yield result
        return
    sampler.start()
    try:
        yield result
    finally:
        result.update(sampler.stop())
