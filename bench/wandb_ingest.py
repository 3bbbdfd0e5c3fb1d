"""Benchmark: ingest a long offline W&B run vs decoding its records bare, and vs ``wandb leet``.

    python bench/wandb_ingest.py [--steps 1000000] [--metrics 20]

The run file is generated with our framing writer and the SDK's own protobufs, in the record
pattern wandb 0.31 writes (per ``wandb.log``: one ``history`` record and two ``summary`` records;
a ``stats`` record every 15 s of simulated time; header, run, environment, telemetry, exit). The
SDK itself logs about 2,400 steps/s here, so a 1M-step run would take 7+ minutes to make; the
writer was checked to reproduce SDK-written files byte for byte (tests/incidents/evidence/wandb/test_framing.py).

Each measurement runs in its own child process so its peak RSS is its own. Printed:
ingest ÷ bare decode (FromString of every record; goal ≤ 1.5), ingest ÷ decode-with-values
(FromString + every item's key and JSON value, nothing kept), ingest vs ``wandb leet inspect --json``
(goal ≥ 2× faster), and each phase's peak RSS (goal ≤ 1.5 GB at 1M steps).
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

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
    """Write a run of ``steps`` × ``metrics`` in the SDK's record pattern; returns seconds taken."""
    from wandb.proto import wandb_internal_pb2 as pb

    from tests.factories import write_records

    start = time.perf_counter()
    names = [f"train/metric_{j:02d}" for j in range(metrics)]
    t0 = 1_750_000_000.0

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
            runtime = 5.0 + step * 0.05
            h = pb.Record()
            h.history.step.num = step
            row = {"_timestamp": repr(t0 + runtime), "_runtime": repr(runtime), "_step": str(step)}
            row.update({name: repr(1.0 / (step + 1) + j) for j, name in enumerate(names)})
            for key, value in row.items():
                item = h.history.item.add()
                item.nested_key.append(key)
                item.value_json = value
            yield h.SerializeToString()
            s1 = pb.Record()
            for key, value in (("_runtime", str(int(runtime))), ("_wandb.runtime", str(int(runtime)))):
                item = s1.summary.update.add()
                item.nested_key.append(key)
                item.value_json = value
            yield s1.SerializeToString()
            s2 = pb.Record()
            for key, value in row.items():
                item = s2.summary.update.add()
                item.nested_key.append(key)
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
    """Run one measurement in a fresh interpreter; imports are done before the clock starts."""
    setup, loop = PHASES[name].split("#START")
    code = f"""
import json, resource, sys, time
sys.path.insert(0, {str(ROOT)!r})
PATH = {str(path)!r}
{setup}
start = time.perf_counter()
{loop}
elapsed = time.perf_counter() - start
print(json.dumps({{"seconds": elapsed, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "result": result}}))
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--metrics", type=int, default=20)
    parser.add_argument("--leet-timeout", type=float, default=1800.0)
    parser.add_argument("--keep", type=Path, help="keep the generated .wandb file at this path")
    parser.add_argument("--ingest-only", action="store_true",
                        help="measure only ingest time and peak RSS (no baselines, no ratios)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="hourtab-bench-") as tmp:
        path = args.keep or Path(tmp) / "run-bench0001.wandb"
        made = generate(path, args.steps, args.metrics)
        size_mb = path.stat().st_size / 1e6
        print(f"generated {args.steps:,} steps × {args.metrics} metrics: {size_mb:,.0f} MB in {made:.1f} s "
              f"(framing writer + SDK protobufs)", flush=True)
        if args.ingest_only:
            ingest = run_phase("ingest", path)
            print(f"ingest (load_run → RunEvidence): {ingest['seconds']:.1f} s, result {ingest['result']}, "
                  f"peak RSS {ingest['rss_mb']:.0f} MB; load average {os.getloadavg()[0]:.1f}")
            return
        bare = run_phase("bare", path)
        print(f"bare decode loop (Record.FromString per record): {bare['seconds']:.1f} s, "
              f"{bare['result']:,} records, peak RSS {bare['rss_mb']:.0f} MB", flush=True)
        values = run_phase("values", path)
        print(f"decode with values (+ every item's key and JSON value): {values['seconds']:.1f} s, "
              f"peak RSS {values['rss_mb']:.0f} MB", flush=True)
        ingest = run_phase("ingest", path)
        steps, metrics, stats = ingest["result"]
        assert steps == args.steps and metrics == args.metrics, ingest
        print(f"ingest (load_run → RunEvidence): {ingest['seconds']:.1f} s, {steps:,} steps, {metrics} metrics, "
              f"{stats} system samples, peak RSS {ingest['rss_mb']:.0f} MB", flush=True)
        leet_s, finished = run_leet(path, args.leet_timeout)
        print(f"wandb leet inspect --json > /dev/null: {leet_s:.1f} s" + ("" if finished else " (stopped at timeout)"),
              flush=True)
        print()
        print(f"ingest ÷ bare decode loop:        {ingest['seconds'] / bare['seconds']:.2f}  (goal ≤ 1.5)")
        print(f"ingest ÷ decode with values:      {ingest['seconds'] / values['seconds']:.2f}")
        print(f"leet ÷ ingest (speed-up vs leet): {'≥ ' if not finished else ''}{leet_s / ingest['seconds']:.2f}×  (goal ≥ 2×)")
        print(f"ingest peak RSS:                  {ingest['rss_mb']:.0f} MB  (goal ≤ 1,500 MB at 1M steps)")
        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end (shared machine)")


if __name__ == "__main__":
    main()
