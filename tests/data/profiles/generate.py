"""Regenerate the profiler samples in this folder (see tests/data/PROVENANCE.md).

Run from the repository root: ``python tests/data/profiles/generate.py``. Needs the repro extra.
Writes
- ``repro/``: profile.json, profiler/key_averages.txt and profiler/trace.json.gz from the reproducer
  (labelled ranges; the W&B runs it names are not kept);
- ``plain_watch.key_averages.txt`` / ``plain_watch.trace.json.gz``: a plain training loop with
  ``wandb.watch(log="all", log_freq=1)`` and no labels, as a user's own capture would look.
"""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
from pathlib import Path

HERE = Path(__file__).parent


def _gzip(source: Path, target: Path) -> None:
    with source.open("rb") as f, gzip.GzipFile(target, "wb", mtime=0) as g:
        shutil.copyfileobj(f, g)


def reproducer_sample(work: Path) -> None:
    from incidents.tools.repro.model import PRESETS
    from incidents.tools.repro.modes import parse_modes
    from incidents.tools.repro.reproduce import ReproSettings, run_repro

    spec = PRESETS["tiny"].with_overrides(layers=1, hidden=32, heads=2, intermediate=128, seq_len=8, batch_size=1)
    out = work / "repro"
    run_repro(ReproSettings(spec=spec, modes=parse_modes("baseline,watch:all:1"), out=out, preset="tiny",
                            steps=3, warmup=1, profile_steps=1, threads=1, progress=False,
                            command="python tests/data/profiles/generate.py"))
    target = HERE / "repro"
    (target / "profiler").mkdir(parents=True, exist_ok=True)
    shutil.copy(out / "profile.json", target / "profile.json")
    shutil.copy(out / "profiler" / "key_averages.txt", target / "profiler" / "key_averages.txt")
    _gzip(out / "profiler" / "trace.json", target / "profiler" / "trace.json.gz")


def plain_watch_sample(work: Path) -> None:
    import torch
    import wandb
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    optimizer = torch.optim.AdamW(model.parameters())
    x, y = torch.randn(16, 64), torch.randint(0, 10, (16,))
    run = wandb.init(mode="offline", dir=str(work), project="samples", settings=wandb.Settings(console="off"))
    run.watch(model, log="all", log_freq=1)

    def export(prof) -> None:
        (HERE / "plain_watch.key_averages.txt").write_text(
            prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=-1) + "\n", encoding="utf-8")
        prof.export_chrome_trace(str(work / "plain.json"))

    with profile(activities=[ProfilerActivity.CPU], on_trace_ready=export,
                 schedule=schedule(wait=0, warmup=1, active=3, repeat=1)) as prof:
        for _ in range(4):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            run.log({"loss": loss.item()})
            prof.step()
    run.finish()
    _gzip(work / "plain.json", HERE / "plain_watch.trace.json.gz")


if __name__ == "__main__":
    os.environ.setdefault("WANDB_SILENT", "true")
    with tempfile.TemporaryDirectory() as tmp:
        reproducer_sample(Path(tmp))
        plain_watch_sample(Path(tmp))
