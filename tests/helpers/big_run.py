"""One large offline W&B run written by the real SDK, made once and kept in pytest's cache folder.

Logging costs the SDK about a millisecond a step on a busy machine, so a 200k-step run takes minutes
to make; it is cached under ``.pytest_cache`` (inside the checkout) keyed by its step count.
``HOURTAB_TEST_BIG_STEPS`` lowers the count on a slow machine.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import zipfile
from pathlib import Path

SCRIPT = r'''
import os, sys
out, steps = sys.argv[1], int(sys.argv[2])
os.environ.update(WANDB_MODE="offline", WANDB_DIR=out, WANDB_SILENT="true", WANDB_DISABLE_GIT="true",
                  WANDB_DISABLE_CODE="true")
import wandb
run = wandb.init(project="hourtab-big", name="big run", config={"lr": 0.1},
                 settings=wandb.Settings(x_disable_stats=True))
for step in range(steps):
    wandb.log({"train/loss": 1.0 / (1 + step * 1e-3), "train/lr": 0.1, "acc": step / steps})
run.finish()
wandb.teardown()
'''

DEFAULT_STEPS = 200_000


def big_steps() -> int:
    return int(os.environ.get("HOURTAB_TEST_BIG_STEPS", DEFAULT_STEPS))


def big_run_zip(cache_dir: Path, steps: int) -> Path:
    """A .zip of one offline run folder with ``steps`` logged steps (made on first use)."""
    archive = cache_dir / f"big-run-{steps}.zip"
    # Test workers (xdist) may ask at once: one makes it while the others wait on the lock.
    with open(cache_dir / f"big-run-{steps}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not archive.exists():
            _make(cache_dir, steps, archive)
    return archive


def _make(cache_dir: Path, steps: int, archive: Path) -> None:
    out = cache_dir / f"runs-{steps}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    subprocess.run([sys.executable, "-c", SCRIPT, str(out), str(steps)], check=True, env=env, timeout=1800)
    run_dir = next((out / "wandb").glob("offline-run-*"))
    tmp = archive.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(run_dir.rglob("*")):
            if f.is_file() and not f.is_symlink():
                z.write(f, f"{run_dir.name}/{f.relative_to(run_dir)}")
    tmp.replace(archive)
