"""Benchmark: ingest a long offline W&B run vs decoding its records, and vs ``wandb leet``.

    python bench/wandb_ingest.py --steps 1000000 --metrics 100 [--no-leet] [--keep FILE [--reuse]]

The run file is generated with our framing writer and the SDK's own protobufs, in the record
pattern wandb 0.31 writes (per ``wandb.log``: one ``history`` record and two ``summary`` records;
a ``stats`` record every 15 s of simulated time; header, run, environment, telemetry, exit). The
SDK itself logs about 2,400 steps/s here, so a 1M-step run would take 7+ minutes to make; the
writer was checked to reproduce SDK-written files byte for byte (tests/incidents/evidence/wandb/test_framing.py).

Each measurement runs in its own child process and reports its own peak RSS (``VmHWM``). Printed:
ingest ÷ decode-with-values (FromString + every item's key and JSON value, nothing kept; goal
≤ 1.0), ingest ÷ bare decode (FromString of every record), ingest vs ``wandb leet inspect --json``
(goal ≥ 2× faster), each phase's peak RSS, and the ingest's bytes per point (step × metric)
above the ingest of a 1,000-step run of the same metrics (goals at 1M × 100: ≤ 2 GB, ≤ 20 bytes
a point, under 2 minutes on an idle machine). ``--ingest-only`` prints one line ending
``… peak RSS N MB; load average L``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
#: Steps of the small run whose ingest peak is the baseline the per-point figure is measured above.
BASELINE_STEPS = 1_000

PHASES = {
    "bare": """
from incidents.evidence.wandb.framing import iter_records
from wandb.proto.wandb_internal_pb2 import Record
#START
w = []
n = 0
for _, payload in iter_records(PATH, w):
    Record.FromString(payload)
    n += 1
result = n
""",
    "values": """
import json
from incidents.evidence.wandb.framing import iter_records
from wandb.proto.wandb_internal_pb2 import Record
#START
w = []
n = 0
for _, payload in iter_records(PATH, w):
    r = Record.FromString(payload)
    kind = r.WhichOneof("record_type")
    items = r.history.item if kind == "history" else r.summary.update if kind == "summary" else \
        r.stats.item if kind == "stats" else ()
    for it in items:
        key = it.nested_key[0] if kind != "stats" and len(it.nested_key) == 1 else it.key
        vj = it.value_json
        try:
            float(vj)
        except ValueError:
            json.loads(vj)
    n += 1
result = n
""",
    "ingest": """
from incidents.evidence.wandb import load_run
import pandas, numpy, google.protobuf.json_format, wandb.proto.wandb_internal_pb2
#START
run = load_run(PATH)
result = [run.steps, len(run.metrics), len(run.system)]
""",
}


def generate(path: Path, steps: int, metrics: int) -> float:
    """Write a run of ``steps`` × ``metrics`` in the SDK's record pattern; returns seconds taken.

    One history and two summary messages are built once and only their values are set per step
    (the same bytes as building each record afresh, several times faster), so a 1M-step file
    takes minutes, not most of an hour.
    """
    from wandb.proto import wandb_internal_pb2 as pb

    from tests.factories import write_records

    start = time.perf_counter()
    keys = ["_timestamp", "_runtime", "_step", *(f"train/metric_{j:02d}" for j in range(metrics))]
    t0 = 1_750_000_000.0

    def templates() -> tuple[list[Any], list[list[Any]]]:
        """Fresh history and summary messages, their items named (values are set per step)."""
        h, s1, s2 = pb.Record(), pb.Record(), pb.Record()
        items = [[h.history.item.add() for _ in keys], [s1.summary.update.add() for _ in range(2)],
                 [s2.summary.update.add() for _ in keys]]
        for group, names in zip(items, (keys, ("_runtime", "_wandb.runtime"), keys), strict=True):
            for item, name in zip(group, names, strict=True):
                item.nested_key.append(name)
        return [h, s1, s2], items

    def records():
        header = pb.Record(num=1)
        header.header.version_info.producer = "0.31.0"
        header.header.version_info.min_consumer = "0.70.0"
        yield header.SerializeToString()
        run = pb.Record(num=2)
        run.run.run_id, run.run.project, run.run.display_name = "bench0001", "bench", "bench run"
        run.run.start_time.FromSeconds(int(t0))
        run.run.telemetry.cli_version, run.run.telemetry.python_version = "0.31.0", "3.11.7"
        yield run.SerializeToString()
        env = pb.Record()
        env.environment.os, env.environment.python, env.environment.cpu_count = "Linux", "CPython 3.11.7", 2
        yield env.SerializeToString()
        next_stats = 0.0
        for step in range(steps):
            if step % 1000 == 0:    # a message keeps every string once set until it is freed: renew them
                (h, s1, s2), (h_items, s1_items, s2_items) = templates()
            runtime = 5.0 + step * 0.05
            values = [repr(t0 + runtime), repr(runtime), str(step),
                      *(repr(1.0 / (step + 1) + j) for j in range(metrics))]
            h.history.step.num = step
            for item, value in zip(h_items, values, strict=True):
                item.value_json = value
            yield h.SerializeToString()
            s1_items[0].value_json = s1_items[1].value_json = str(int(runtime))
            yield s1.SerializeToString()
            for item, value in zip(s2_items, values, strict=True):
                item.value_json = value
            yield s2.SerializeToString()
            if runtime >= next_stats:
                st = pb.Record()
                st.stats.timestamp.FromNanoseconds(int((t0 + runtime) * 1e9))
                for key, value in (("cpu", "50.0"), ("memory_percent", "12.5"), ("gpu.0.gpu", "87.0")):
                    item = st.stats.item.add()
                    item.key, item.value_json = key, value
                yield st.SerializeToString()
                next_stats += 15.0
        ex = pb.Record()
        ex.exit.exit_code, ex.exit.runtime = 0, int(5 + steps * 0.05)
        yield ex.SerializeToString()

    with open(path, "wb") as f:
        write_records(f, records())
    return time.perf_counter() - start


def run_phase(name: str, path: Path) -> dict:
    """Run one measurement in a fresh interpreter; imports are done before the clock starts.

    Peak memory is the child's own ``VmHWM``: ``ru_maxrss`` carries the parent's peak across
    ``exec`` on Linux, so it would report the generator's memory, not the phase's.
    """
    setup, loop = PHASES[name].split("#START")
    code = f"""
import json, resource, sys, time
sys.path.insert(0, {str(ROOT)!r})
PATH = {str(path)!r}
{setup}
start, cpu = time.perf_counter(), time.process_time()
{loop}
elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
try:
    with open("/proc/self/status") as status:
        peak_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
except OSError:
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"seconds": elapsed, "cpu_seconds": cpu, "rss_mb": peak_kb / 1024, "result": result}}))
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_leet(path: Path, timeout: float) -> tuple[float, bool]:
    wandb_cli = str(Path(sys.executable).parent / "wandb")
    start = time.perf_counter()
    try:
        subprocess.run([wandb_cli, "leet", "inspect", "--json", str(path)], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True, timeout=timeout)
        return time.perf_counter() - start, True
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, False


def baseline(tmp: Path, metrics: int) -> dict:
    """Ingest of a small run (1,000 steps, same metrics): the memory any ingest needs at all."""
    small = tmp / "run-small.wandb"
    generate(small, BASELINE_STEPS, metrics)
    return run_phase("ingest", small)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--metrics", type=int, default=20)
    parser.add_argument("--leet-timeout", type=float, default=1800.0)
    parser.add_argument("--no-leet", action="store_true", help="skip wandb leet (about 20 minutes at 1M × 100)")
    parser.add_argument("--keep", type=Path, help="keep the generated .wandb file at this path")
    parser.add_argument("--reuse", action="store_true",
                        help="with --keep: read the file already there instead of generating it again")
    parser.add_argument("--ingest-only", action="store_true",
                        help="measure only ingest time and peak RSS (no baselines, no ratios)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="hourtab-bench-") as tmp:
        path = args.keep or Path(tmp) / "run-bench0001.wandb"
        if args.reuse and args.keep and path.exists():
            print(f"reusing {path} ({path.stat().st_size / 1e6:,.0f} MB)", flush=True)
        else:
            made = generate(path, args.steps, args.metrics)
            print(f"generated {args.steps:,} steps × {args.metrics} metrics: {path.stat().st_size / 1e6:,.0f} MB "
                  f"in {made:.1f} s (framing writer + SDK protobufs)", flush=True)
        if args.ingest_only:
            ingest = run_phase("ingest", path)
            print(f"ingest (load_run → RunEvidence): {ingest['seconds']:.1f} s ({ingest['cpu_seconds']:.1f} s CPU), "
                  f"result {ingest['result']}, peak RSS {ingest['rss_mb']:.0f} MB; "
                  f"load average {os.getloadavg()[0]:.1f}")
            return
        small = baseline(Path(tmp), args.metrics)
        print(f"small run ({BASELINE_STEPS:,} steps × {args.metrics}) ingest peak RSS {small['rss_mb']:.0f} MB "
              "(the baseline)", flush=True)
        bare = run_phase("bare", path)
        print(f"bare decode loop (Record.FromString per record): {bare['seconds']:.1f} s, "
              f"{bare['result']:,} records, peak RSS {bare['rss_mb']:.0f} MB", flush=True)
        values = run_phase("values", path)
        print(f"decode with values (+ every item's key and JSON value): {values['seconds']:.1f} s "
              f"({values['cpu_seconds']:.1f} s CPU), peak RSS {values['rss_mb']:.0f} MB", flush=True)
        ingest = run_phase("ingest", path)
        steps, metrics, stats = ingest["result"]
        assert steps == args.steps and metrics == args.metrics, ingest
        print(f"ingest (load_run → RunEvidence): {ingest['seconds']:.1f} s ({ingest['cpu_seconds']:.1f} s CPU), "
              f"{steps:,} steps, {metrics} metrics, {stats} system samples, peak RSS {ingest['rss_mb']:.0f} MB",
              flush=True)
        if not args.no_leet:
            leet_s, finished = run_leet(path, args.leet_timeout)
            print(f"wandb leet inspect --json > /dev/null: {leet_s:.1f} s" + ("" if finished else " (stopped at timeout)"),
                  flush=True)
        points = (steps - BASELINE_STEPS) * metrics
        per_point = (ingest["rss_mb"] - small["rss_mb"]) * 2**20 / points if points > 0 else float("nan")
        print()
        print(f"ingest ÷ bare decode loop:        {ingest['seconds'] / bare['seconds']:.2f}")
        print(f"ingest ÷ decode with values:      {ingest['seconds'] / values['seconds']:.2f}  "
              f"(CPU time {ingest['cpu_seconds'] / values['cpu_seconds']:.2f}; goal ≤ 1.0)")
        if not args.no_leet:
            print(f"leet ÷ ingest (speed-up vs leet): {'≥ ' if not finished else ''}{leet_s / ingest['seconds']:.2f}×"
                  "  (goal ≥ 2×)")
        print(f"ingest peak RSS:                  {ingest['rss_mb']:,.0f} MB  (goal ≤ 2,000 MB at 1M × 100)")
        print(f"above the small run, per point:   {per_point:.1f} bytes  (goal ≤ 20)")
        print(f"ingest time:                      {ingest['seconds']:.1f} s  (goal < 120 s at 1M × 100, idle machine)")
        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end (shared machine)")


if __name__ == "__main__":
    main()
