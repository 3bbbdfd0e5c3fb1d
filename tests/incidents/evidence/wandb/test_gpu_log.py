"""A GPU run's facts and system metrics, in a log built from the SDK's protobufs.

No GPU here, so the SDK cannot write these records itself; the records use the exact protobuf
fields a GPU machine fills (``gpu_nvidia``, ``cuda_version``, ``gpu.<i>.gpu`` stats keys) and the
framing writer that reproduces SDK files byte for byte (test_framing.py).
"""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner
from wandb.proto import wandb_internal_pb2 as pb

from app.cli import cli
from tests.factories import write_records

T0 = 1_750_000_000


def _log(path, util0, util1):
    records = []
    run = pb.Record()
    run.run.run_id, run.run.project, run.run.display_name = "gpu00001", "bert", "bert <i>watch</i>"
    run.run.start_time.FromSeconds(T0)
    run.run.telemetry.cli_version = "0.31.0"
    records.append(run)
    env = pb.Record()
    e = env.environment
    e.python, e.os, e.gpu_type, e.gpu_count, e.cuda_version = "CPython 3.11.9", "Linux", "NVIDIA H100 80GB HBM3", 2, "12.4"
    e.git.commit, e.program, e.cpu.model = "0123abc", "train.py", "Intel Xeon"
    e.args.extend(["--watch", "all"])
    for _ in range(2):
        g = e.gpu_nvidia.add()
        g.name, g.memory_total = "NVIDIA H100 80GB HBM3", 85520809984
    records.append(env)
    for i, (u0, u1) in enumerate(zip(util0, util1, strict=True)):
        st = pb.Record()
        st.stats.timestamp.FromSeconds(T0 + 15 * i)
        for key, value in (("gpu.0.gpu", u0), ("gpu.1.gpu", u1), ("gpu.0.powerWatts", 300.0), ("cpu", 12.0)):
            item = st.stats.item.add()
            item.key, item.value_json = key, json.dumps(value)
        records.append(st)
    for step in range(5):
        h = pb.Record()
        h.history.step.num = step
        for key, value in (("_step", step), ("_runtime", 10.0 * step), ("loss", 1.0 / (step + 1))):
            item = h.history.item.add()
            item.nested_key.append(key)
            item.value_json = json.dumps(value)
        records.append(h)
    with open(path, "wb") as f:
        write_records(f, (r.SerializeToString() for r in records))


def test_gpu_facts_and_steady_state_utilisation(tmp_path):
    rng = np.random.default_rng(1)
    util0 = [0.0] * 2 + list(rng.uniform(5, 30, 36)) + [0.0] * 2        # idle edges, low steady state
    util1 = list(rng.uniform(60, 100, 40))
    path = tmp_path / "run-gpu00001.wandb"
    _log(path, util0, util1)
    result = CliRunner().invoke(cli, ["wandb", "inspect", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    env = data["environment"]
    assert env["gpu_name"] == "NVIDIA H100 80GB HBM3" and env["gpu_count"] == 2
    assert env["gpu_memory_bytes"] == 85520809984 and env["cuda"] == "12.4" and env["git_commit"] == "0123abc"
    assert env["args"] == ["--watch", "all"] and env["cpu"] == "Intel Xeon"
    assert {"system.gpu.0.gpu", "system.gpu.1.gpu", "system.gpu.0.powerWatts", "system.cpu"} <= set(data["system_metrics"])
    # steady state: samples 2..37 of 40 at 15 s spacing (first and last 5 % of 585 s left out)
    steady0 = np.array(util0[2:38])
    got = data["gpu_utilization"]["0"]
    assert set(got) == {"mean", "median", "p10"}
    assert got["mean"] == np.mean(steady0) and got["median"] == np.median(steady0)
    assert got["p10"] == np.percentile(steady0, 10)
    assert data["gpu_utilization"]["1"]["mean"] == np.mean(util1[2:38])
    assert data["name"] == "bert <i>watch</i>" and data["steps"] == 5 and data["metrics"] == ["loss"]
