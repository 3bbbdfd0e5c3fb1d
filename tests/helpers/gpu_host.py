"""What a GPU host's W&B SDK adds to a run, added to runs this GPU-less machine writes.

The SDK writes system metrics only for the hardware it runs on. A GPU host's SDK writes an
``environment`` record with ``gpu_nvidia`` facts and ``stats`` records with ``gpu.<i>.gpu`` and
``gpu.<i>.memoryAllocated``; an Apple-silicon host's writes ``apple`` facts. These helpers append such
records to the SDK's own ``.wandb`` file with the framing writer that reproduces SDK files byte for
byte (tests/incidents/evidence/wandb/test_framing.py); everything else in the file is the SDK's.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tests.helpers.wandb_runs import closed_log, load_run

A100 = ("NVIDIA A100-SXM4-40GB", 42949672960)


def _rewrite(folder: Path, extra: list[bytes]) -> None:
    from incidents.evidence.wandb.framing import iter_records
    from tests.factories import write_records

    path = closed_log(folder)
    payloads = [p for _, p in iter_records(path, [])]
    with open(path, "wb") as f:
        write_records(f, iter(payloads[:-1] + extra + payloads[-1:]))


def add_gpu_host(folder: Path, gpus: int = 2, util: float = 0.0, memory: float = 1.0, samples: int = 40,
                 gpu: tuple[str, int] = A100) -> None:
    """A GPU host's environment, and ``samples`` GPU stats (idle by default) spread evenly over the
    time the run trained, as a host sampling that often would write them."""
    from wandb.proto import wandb_internal_pb2 as pb

    closed_log(folder)
    env = pb.Record()
    env.environment.gpu_count, env.environment.gpu_type = gpus, gpu[0]
    for _ in range(gpus):
        g = env.environment.gpu_nvidia.add()
        g.name, g.memory_total = gpu
    extra = [env.SerializeToString()]
    rng = np.random.default_rng(0)
    stamps = load_run(folder).history["_timestamp"].dropna()
    for t in np.linspace(float(stamps.iloc[0]), float(stamps.iloc[-1]), samples + 2)[1:-1]:
        i = len(extra)
        st = pb.Record()
        st.stats.timestamp.FromNanoseconds(int(t * 1e9))
        for g in range(gpus):
            for key, value in ((f"gpu.{g}.gpu", util + (0.0 if i % 7 else 1.0)),
                               (f"gpu.{g}.memoryAllocated", memory + float(rng.uniform(-0.1, 0.2)))):
                item = st.stats.item.add()
                item.key, item.value_json = key, json.dumps(value)
        extra.append(st.SerializeToString())
    _rewrite(folder, extra)


def add_apple_host(folder: Path, name: str = "Apple M2 Pro", gpu_cores: int = 19) -> None:
    """An Apple-silicon host's environment facts (the SDK's ``apple`` record fields)."""
    from wandb.proto import wandb_internal_pb2 as pb

    env = pb.Record()
    env.environment.apple.name, env.environment.apple.gpu_cores = name, gpu_cores
    env.environment.apple.ecpu_cores, env.environment.apple.pcpu_cores = 4, 8
    _rewrite(folder, [env.SerializeToString()])
