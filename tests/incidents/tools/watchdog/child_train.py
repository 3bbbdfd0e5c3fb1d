"""A training process for the watchdog tests: the reproducer's tiny BERT, logging to an offline W&B run.

Usage: ``python child_train.py ROOT watch|baseline STEPS STOPFILE``. It stops early (finishing its
run cleanly) when STOPFILE appears, so a test can end it once the watchdog has spoken.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> None:
    root, mode, steps, stop = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    os.environ.update(WANDB_MODE="offline", WANDB_DIR=root, WANDB_SILENT="true", WANDB_CONSOLE="off",
                      WANDB_DISABLE_GIT="true", WANDB_CONFIG_DIR=os.path.join(root, "config"),
                      WANDB_CACHE_DIR=os.path.join(root, "cache"), WANDB_DATA_DIR=os.path.join(root, "data"))
    import torch
    import wandb

    from incidents.tools.repro.model import PRESETS, build_model, synthetic_batches

    torch.set_num_threads(1)
    spec = PRESETS["tiny"].with_overrides(seq_len=32)
    model = build_model(spec, seed=0)
    batches = synthetic_batches(spec, seed=0, count=4, device="cpu")
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    run = wandb.init(project="watchdog-test")
    if mode == "watch":
        wandb.watch(model, log="all", log_freq=1)
    for step in range(steps):
        if stop.exists():
            break
        loss = model(**batches[step % len(batches)]).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        run.log({"loss": loss.item()})
    run.finish()


if __name__ == "__main__":
    main()
