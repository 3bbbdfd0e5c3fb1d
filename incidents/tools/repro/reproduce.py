"""Run the reproducer: every mode on a fresh model, measured the same way, written under ``--out``.

Each mode gets a fresh BERT and AdamW from the same seed, trains on the same synthetic batches,
runs its warm-up steps unmeasured, then its measured steps, and logs to its own W&B offline run
(``wandb.watch`` needs a run, and the runs are evidence HourTab's W&B importer reads back). After
the measured steps a few more run under ``torch.profiler``; the capture of the heaviest mode is
kept. ``Ctrl-C`` ends the current mode, finishes its W&B run and writes what was measured.
"""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from tqdm import tqdm

from incidents.errors import ReproUnavailable
from incidents.tools.repro import measure, output
from incidents.tools.repro.model import (
    build_model,
    describe_model,
    require_torch,
    synthetic_batches,
    validate_spec,
)
from incidents.tools.repro.modes import InvalidReproArgument, Mode
from incidents.tools.repro.repro_settings import DEFAULT_PROJECT_STEPS, PROFILE_DIR, ModeResult, ReproSettings

#: Distinct synthetic batches cycled through (enough variety, little memory).
BATCH_POOL = 8
WANDB_PROJECT = "hourtab-repro"


def check_device(requested: str) -> None:
    """A device name torch could be asked for; checked before torch is imported (a typo is exit 2
    whether or not the repro extra is installed)."""
    if requested not in {"auto", "cpu", "cuda"} and not requested.startswith("cuda:"):
        raise InvalidReproArgument(f"--device must be auto, cpu or cuda, not {requested!r}.")


def resolve_device(torch: Any, requested: str) -> str:
    """``auto`` → cuda when present, else cpu; an explicit ``cuda`` without a GPU is an error."""
    check_device(requested)
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise InvalidReproArgument("--device cuda was asked for but torch sees no CUDA device here.")
    return requested


def idle_cores(torch_default: int) -> int:
    """CPU threads to train with when --threads is not given: torch's default, less the cores other
    processes keep busy (1-minute load average), at least one.

    On a shared machine, more threads than idle cores make torch's OpenMP workers wait on each
    other and a step many times slower, which would measure the neighbours rather than the watch.
    """
    try:
        busy = os.getloadavg()[0]
    except OSError:
        return torch_default
    return max(1, min(torch_default, round((os.cpu_count() or 1) - busy)))


def check_settings(settings: ReproSettings) -> None:
    """Refuse bad settings before anything is built, written or downloaded."""
    validate_spec(settings.spec)
    check_device(settings.device)
    for name, value, minimum in (("steps", settings.steps, 1), ("warmup", settings.warmup, 0),
                                 ("project-steps", settings.project_steps, 1),
                                 ("profile-steps", settings.profile_steps, 0), ("rounds", settings.rounds, 1)):
        if value < minimum:
            raise InvalidReproArgument(f"--{name} must be at least {minimum}, not {value}.")
    if settings.threads is not None and settings.threads < 1:
        raise InvalidReproArgument(f"--threads must be at least 1, not {settings.threads}.")
    if (settings.out / "profile.json").exists():
        raise InvalidReproArgument(f"{settings.out} already holds a profile.json; choose another --out "
                                   "so no earlier measurement is overwritten.")
    if any(m.kind == "fastwatch" for m in settings.modes):
        fastwatch_module()


def fastwatch_module() -> Any:
    """HourTab's low-overhead watch (``incidents.tools.fastwatch``), imported only when a mode asks for it."""
    try:
        from incidents.tools import fastwatch  # noqa: PLC0415 -- imported when a fastwatch mode runs; it may be absent
    except ImportError as e:
        raise ReproUnavailable("The fastwatch modes need incidents.tools.fastwatch (HourTab's low-overhead watch), "
                               f"which this installation lacks ({e}); run the other modes.") from e
    return fastwatch


def run_repro(settings: ReproSettings) -> dict[str, Any]:
    """Measure every mode, write profile.json, profile.md, the W&B runs and the profiler capture."""
    check_settings(settings)
    torch, _ = require_torch()
    device = resolve_device(torch, settings.device)
    if device == "cpu":
        torch.set_num_threads(settings.threads or idle_cores(torch.get_num_threads()))
    out = settings.out
    out.mkdir(parents=True, exist_ok=True)
    scratch = out / ".profiler-scratch"
    results: list[ModeResult] = []
    model_info: dict[str, Any] | None = None
    interrupted = False
    started = time.time()
    batches = synthetic_batches(settings.spec, settings.seed, min(BATCH_POOL, settings.steps + settings.warmup),
                                device)
    per_mode = settings.warmup + settings.steps + (settings.profile_steps + 1 if settings.profile_steps else 0)
    load_before = output.load_average()
    by_mode: dict[str, ModeResult] = {}
    rounds = max(1, settings.rounds)
    with _progress(settings.progress, per_mode * len(settings.modes) * rounds) as bar:
        for number in range(rounds):
            for mode in settings.modes:
                if str(mode) not in by_mode:   # a mode Ctrl-C stopped before it started is left out
                    by_mode[str(mode)] = ModeResult(mode)
                    results.append(by_mode[str(mode)])
                result = by_mode[str(mode)]
                try:
                    _run_mode(torch, settings, device, mode, batches, result, scratch, bar,
                              profile=number == rounds - 1)
                except KeyboardInterrupt:
                    interrupted = True
                    break
                finally:
                    model_info = model_info or result.model_info
            if interrupted:
                break
    settings_load = {"before": load_before, "after": output.load_average()}
    heaviest = _keep_heaviest_profile(results, scratch, out)
    profile = output.build_profile(settings, device, model_info, results, heaviest, interrupted,
                                   wall_s=time.time() - started)
    profile["machine"]["load_average_before"] = settings_load["before"]
    profile["machine"]["load_average_after"] = settings_load["after"]
    output.write_outputs(profile, out)
    return profile


@contextmanager
def _progress(enabled: bool, total: int) -> Iterator[Any]:
    bar = tqdm(total=total, unit="step", disable=not enabled, dynamic_ncols=True, leave=True)
    try:
        yield bar
    finally:
        bar.close()


def _run_mode(torch: Any, settings: ReproSettings, device: str, mode: Mode, batches: list[dict[str, Any]],
              result: ModeResult, scratch: Path, bar: Any, profile: bool = True) -> None:
    bar.set_description(str(mode))
    model = build_model(settings.spec, settings.seed).to(device)
    model.train()
    result.model_info = describe_model(model, settings.spec, settings.preset)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.lr)
    run = _start_run(settings, device, mode)
    result.wandb_run = {"id": run.id, "dir": os.path.relpath(Path(run.dir).parent, settings.out)}
    timer: measure.HookTimer = measure.HookTimer()
    detach: Callable[[], None] = _nothing
    clock = measure.StepClock(torch, device)
    result.phase_timer = clock.timer
    train: Callable[[dict[str, Any]], float] = partial(_train_step, torch, model, optimizer, run=run, clock=clock)
    exit_code = 0
    try:
        timer, detach = _attach(torch, run, model, mode)
        for i in range(settings.warmup):
            train(batches[i % len(batches)])
            result.training_steps += 1
            bar.update(1)
        first = _measure_steps(torch, settings, device, batches, result, timer, bar, clock, train)
        _record_watch(result, timer)
        result.complete = True
        run.summary.update(_run_summary(result, first))
        if settings.profile_steps and profile:
            result.profile_files = _profile_steps(torch, settings, device, mode, model, optimizer, batches,
                                                  run, clock, scratch, bar)
    except KeyboardInterrupt:
        exit_code = 130
        result.histograms_logged = _histograms_logged(timer)
        result.top_tensors = timer.top_tensors()
        raise
    finally:
        timer.close()
        detach()
        run.finish(exit_code=exit_code)


def _start_run(settings: ReproSettings, device: str, mode: Mode) -> Any:
    """The mode's offline W&B run, named after the mode and this machine."""
    import wandb  # noqa: PLC0415 -- wandb is the slowest import here, and only a measured mode needs it

    return wandb.init(
        mode="offline", dir=str(settings.out), project=WANDB_PROJECT, job_type="repro",
        name=f"repro {mode} on {platform.node() or 'this machine'}", group="hourtab-repro",
        config={"repro_mode": str(mode), "preset": settings.preset, **settings.spec.to_dict(),
                "steps": settings.steps, "warmup": settings.warmup, "seed": settings.seed, "device": device},
        settings=wandb.Settings(console="off", quiet=True, silent=True), reinit="finish_previous",
    )


def _measure_steps(torch: Any, settings: ReproSettings, device: str, batches: list[dict[str, Any]],
                   result: ModeResult, timer: measure.HookTimer, bar: Any, clock: measure.StepClock,
                   train: Callable[[dict[str, Any]], float]) -> int:
    """The measured steps after warm-up, one round appended; returns the index of its first step."""
    sampler = measure.NvmlSampler(torch.cuda.current_device()) if device.startswith("cuda") else None
    timer.take()
    timer.measuring = True
    first = len(result.step_s)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    with measure.sampling(sampler) as util:
        for i in range(settings.steps):
            result.step_s.append(train(batches[(settings.warmup + i) % len(batches)]))
            result.training_steps += 1
            result.phase_s.append(clock.phases())
            result.hook_s.append(timer.take())
            bar.update(1)
    timer.measuring = False
    # Process CPU time counts every thread (fastwatch's worker too), so it shows contention the wall
    # clock hides when the worker has no spare core.
    result.rounds.append({"median_step_s": statistics.median(result.step_s[first:]) if result.step_s[first:]
                          else None, "wall_s": time.perf_counter() - wall0, "cpu_s": time.process_time() - cpu0})
    result.device_utilization = util or None
    return first


def _record_watch(result: ModeResult, timer: measure.HookTimer) -> None:
    """What the watch did over the measured steps: CPU seconds, histograms, costliest tensors."""
    result.hook_cpu_s = timer.cpu_seconds
    result.histograms_logged = _histograms_logged(timer)
    result.top_tensors = timer.top_tensors()
    if isinstance(timer, measure.FastwatchHookTimer):
        result.watch_thread_cpu_s = timer.worker_seconds()


def _nothing() -> None:
    """Detach function of a mode that attached nothing."""


def _histograms_logged(timer: measure.HookTimer) -> int | None:
    """Histograms logged so far (for fastwatch, after its logging thread has caught up)."""
    if isinstance(timer, measure.FastwatchHookTimer):
        return timer.histograms_logged()
    return timer.calls


def _run_summary(result: ModeResult, first: int) -> dict[str, Any]:
    """This run's own figures: the steps measured from ``first`` on (one round), not the mode's so far,
    since a report cites a run's summary as that run's."""
    steps, hooks = result.step_s[first:], result.hook_s[first:]
    stats = measure.step_time_stats(steps)
    total = sum(steps)
    return {"repro/mode": str(result.mode), "repro/mean_step_s": stats["mean_step_s"],
            "repro/median_step_s": stats["median_step_s"], "repro/p90_step_s": stats["p90_step_s"],
            "repro/hook_share": sum(hooks) / total if total else None,
            "repro/steps_measured": len(steps)}


def _attach(torch: Any, run: Any, model: Any, mode: Mode) -> tuple[measure.HookTimer, Callable[[], None]]:
    """Attach the mode's watch; return its hook timer and the function that detaches it."""
    if mode.kind == "baseline":
        return measure.HookTimer(), _nothing
    if mode.kind == "watch":
        # idx=0: each mode is a fresh run, so names stay "gradients/<param>" rather than
        # wandb's "graph_<n>" prefix for a second watch in one process.
        run.watch(model, log=mode.log, log_freq=mode.log_freq, idx=0)
        timer = measure.WandbHookTimer(run, model, torch.profiler.record_function)
        return timer, lambda: run.unwatch(model)
    fastwatch = fastwatch_module()
    handle = fastwatch.watch(model, log=mode.log, log_freq=mode.log_freq, run=run)
    return measure.FastwatchHookTimer(handle), lambda: fastwatch.unwatch(model)


def _train_step(torch: Any, model: Any, optimizer: Any, batch: dict[str, Any], run: Any,
                clock: measure.StepClock) -> float:
    """One labelled, timed training step, W&B log included as in a real loop; returns wall seconds."""
    record = torch.profiler.record_function
    clock.begin()
    with record(measure.PHASE_RANGES["forward"]):
        outputs = model(**batch)
    clock.mark("forward")
    with record(measure.PHASE_RANGES["backward"]):
        outputs.loss.backward()
    clock.mark("backward")
    with record(measure.PHASE_RANGES["optimizer"]):
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    clock.mark("optimizer")
    run.log({"train/loss": outputs.loss.item()})
    return clock.end()


def bare_steps(torch: Any, model: Any, optimizer: Any, batches: list[dict[str, Any]], run: Any, steps: int,
               device: str) -> float:
    """The same training step with none of our timing, labels or sampling; mean seconds per step.

    The benchmark divides the instrumented baseline by this to show what measuring costs.
    """
    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    for i in range(steps):
        outputs = model(**batches[i % len(batches)])
        outputs.loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        run.log({"train/loss": outputs.loss.item()})
    if cuda:
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / steps


def timed_steps(torch: Any, model: Any, optimizer: Any, batches: list[dict[str, Any]], run: Any, steps: int,
                device: str) -> list[float]:
    """The reproducer's instrumented step, as the runner measures it (for the benchmark)."""
    clock = measure.StepClock(torch, device)
    sampler = measure.NvmlSampler(torch.cuda.current_device()) if device.startswith("cuda") else None
    timer = measure.HookTimer(measuring=True)
    times = []
    with measure.sampling(sampler):
        for i in range(steps):
            times.append(_train_step(torch, model, optimizer, batches[i % len(batches)], run, clock))
            clock.phases()
            timer.take()
    return times


def _profile_steps(torch: Any, settings: ReproSettings, device: str, mode: Mode, model: Any, optimizer: Any,
                   batches: list[dict[str, Any]], run: Any, clock: measure.StepClock, scratch: Path,
                   bar: Any) -> dict[str, str]:
    """Capture ``profile_steps`` steps (after one profiler warm-up step) into scratch files."""
    from torch.profiler import ProfilerActivity, profile, schedule  # noqa: PLC0415 -- torch only inside the reproducer (the tools fence)

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    target = scratch / _slug(mode)
    target.mkdir(parents=True, exist_ok=True)
    sort = "self_cuda_time_total" if device.startswith("cuda") else "self_cpu_time_total"

    spec = settings.spec
    tensors = sum(1 for _ in model.parameters())
    # The setup the table is of, above it, so a table read without its profile.json is never taken
    # for another model's (incidents.evidence.profile_ranges.setup_header reads it).
    header = (f"# hourtab repro: model=BertForSequenceClassification preset={settings.preset or 'custom'} "
              f"layers={spec.layers} hidden={spec.hidden} seq_len={spec.seq_len} batch_size={spec.batch_size} "
              f"parameter_tensors={tensors} parameters={sum(p.numel() for p in model.parameters())} "
              f"mode={mode} device={device}\n")

    def export(prof: Any) -> None:
        # Called by the profiler when its active window closes, before it clears the events.
        table = prof.key_averages().table(sort_by=sort, row_limit=-1)
        (target / "key_averages.txt").write_text(header + table + "\n", encoding="utf-8")
        prof.export_chrome_trace(str(target / "trace.json"))

    with profile(activities=activities, record_shapes=False, on_trace_ready=export,
                 schedule=schedule(wait=0, warmup=1, active=settings.profile_steps, repeat=1)) as prof:
        for i in range(settings.profile_steps + 1):
            _train_step(torch, model, optimizer, batches[i % len(batches)], run, clock)
            prof.step()
            bar.update(1)
    return {"table": "key_averages.txt", "chrome_trace": "trace.json", "steps": str(settings.profile_steps)}


def _keep_heaviest_profile(results: list[ModeResult], scratch: Path, out: Path) -> ModeResult | None:
    """Move the heaviest profiled mode's capture to ``out/profiler/`` and drop the others."""
    profiled = [r for r in results if r.profile_files and r.step_s]
    heaviest = max(profiled, key=lambda r: sum(r.step_s) / len(r.step_s), default=None)
    if heaviest is not None:
        target = out / PROFILE_DIR
        target.mkdir(exist_ok=True)
        source = scratch / _slug(heaviest.mode)
        for name in ("key_averages.txt", "trace.json"):
            shutil.move(str(source / name), str(target / name))
    shutil.rmtree(scratch, ignore_errors=True)
    return heaviest


def _slug(mode: Mode) -> str:
    return str(mode).replace(":", "-")


__all__ = ["ReproSettings", "ModeResult", "run_repro", "bare_steps", "timed_steps", "resolve_device",
           "DEFAULT_PROJECT_STEPS"]
