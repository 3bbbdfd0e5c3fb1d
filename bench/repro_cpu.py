"""Benchmark of the reproducer on CPU (issue 6). Not a test: one run, figures printed.

    python bench/repro_cpu.py                         # bert-base, batch 2 x seq 128, 1 thread, 5 steps/mode
    python bench/repro_cpu.py --steps 20 --pairs 12   # more samples on a noisy machine
    python bench/repro_cpu.py --out /tmp/repro-cpu    # keep profile.json/profile.md and the W&B runs

Part 1 runs ``hourtab repro``'s own runner on bert-base with the three default modes (baseline,
``watch:all:1``, ``watch:gradients:100``) and prints each mode's mean step time and its ratio to the
baseline measured in the same run.

Part 2 is the reproducer's own measurement overhead: the baseline step with everything the runner
adds (host-clock phase marks, ``record_function`` labels, hook-time bookkeeping; NVML sampling on
CUDA only) divided by a bare loop of the same step, on one model, alternating bare and instrumented
steps so load changes hit both alike. Goal: <= 1.02. Because a 2 s step on a shared machine is noisy,
it also prints the instrumentation's cost measured alone (thousands of empty instrumented steps), a
noise-free bound on the same ratio.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=5, help="measured steps per mode (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="warm-up steps per mode (default 1)")
    parser.add_argument("--pairs", type=int, default=6, help="bare/instrumented step pairs for part 2 (default 6)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1: the machine is shared)")
    parser.add_argument("--out", type=Path, help="keep the reproducer's output here (default: a temp folder)")
    args = parser.parse_args()
    os.environ.setdefault("WANDB_SILENT", "true")

    import torch

    from incidents.tools.repro.measure import HookTimer, StepClock
    from incidents.tools.repro.model import PRESETS, build_model, synthetic_batches
    from incidents.tools.repro.modes import DEFAULT_MODES, parse_modes
    from incidents.tools.repro.output import hardware_info
    from incidents.tools.repro.reproduce import ReproSettings, bare_steps, run_repro, timed_steps

    torch.set_num_threads(args.threads)
    hw = hardware_info("cpu")
    print(f"machine: {platform.node()} · CPU {hw['cpu_model']} · {hw['cpu_cores']} logical cores · "
          f"torch {torch.__version__} · {hw['torch_threads']} torch thread(s)")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (the machine is shared)")
    spec = PRESETS["bert-base"]
    print(f"model: bert-base, batch {spec.batch_size} x seq {spec.seq_len}, {args.warmup} warm-up + "
          f"{args.steps} measured steps per mode\n")

    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("WANDB_DIR", tmp)
        out = args.out or Path(tmp) / "repro"
        started = time.perf_counter()
        profile = run_repro(ReproSettings(spec=spec, modes=parse_modes(DEFAULT_MODES), out=out, preset="bert-base",
                                          steps=args.steps, warmup=args.warmup, device="cpu", profile_steps=0,
                                          threads=args.threads, progress=False,
                                          command="python bench/repro_cpu.py"))
        print(f"part 1: hourtab repro, three default modes ({time.perf_counter() - started:.0f} s)")
        print(f"  {'mode':<22} {'mean step':>10} {'median':>10} {'x baseline':>11} {'hook share':>11}")
        for m in profile["modes"]:
            print(f"  {m['mode']:<22} {m['mean_step_s'] * 1000:>8.0f} ms {m['median_step_s'] * 1000:>7.0f} ms "
                  f"{m['ratio_to_baseline']:>10.2f}x {m['hook_share'] * 100:>10.1f} %")
            if m["note"]:
                print(f"    note: {m['note']}")

        import wandb

        model = build_model(spec, seed=0)
        optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
        batches = synthetic_batches(spec, 0, 4, "cpu")
        run = wandb.init(mode="offline", dir=tmp, project="hourtab-bench", name="repro overhead",
                         settings=wandb.Settings(console="off", silent=True), reinit="finish_previous")
        try:
            bare_steps(torch, model, optimizer, batches, run, 1, "cpu")  # warm-up
            bare: list[float] = []
            timed: list[float] = []

            def one_bare() -> None:
                bare.append(bare_steps(torch, model, optimizer, batches, run, 1, "cpu"))

            def one_timed() -> None:
                timed.extend(timed_steps(torch, model, optimizer, batches, run, 1, "cpu"))

            for i in range(args.pairs):
                for step in (one_bare, one_timed) if i % 2 == 0 else (one_timed, one_bare):
                    step()
        finally:
            run.finish()

    clock, timer = StepClock(torch, "cpu"), HookTimer(measuring=True)
    labels = torch.profiler.record_function
    n = 20_000
    started = time.perf_counter()
    for _ in range(n):
        clock.begin()
        for phase in ("forward", "backward", "optimizer"):
            with labels(f"repro.{phase}"):
                pass
            clock.mark(phase)
        clock.end()
        clock.phases()
        timer.take()
    per_step_us = (time.perf_counter() - started) / n * 1e6
    bare_median, timed_median = statistics.median(bare), statistics.median(timed)
    print(f"\npart 2: the reproducer's measurement overhead (baseline, {args.pairs} alternating pairs)")
    print(f"  bare loop          median {bare_median * 1000:8.0f} ms/step (mean {statistics.fmean(bare) * 1000:.0f})")
    print(f"  with our timing    median {timed_median * 1000:8.0f} ms/step (mean {statistics.fmean(timed) * 1000:.0f})")
    print(f"  ratio timed / bare: {timed_median / bare_median:.3f}  (goal <= 1.02; step-to-step noise dominates)")
    print(f"  instrumentation alone: {per_step_us:.1f} us/step -> {1 + per_step_us / 1e6 / bare_median:.5f} "
          "of the bare step")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
