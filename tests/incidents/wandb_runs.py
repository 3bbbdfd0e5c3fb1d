"""Helpers for tests that make real W&B offline runs: an isolated offline environment, and reading back."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def offline_wandb(root: Path) -> Iterator[Path]:
    """WANDB_MODE=offline with every W&B folder under ``root``; the environment is restored after."""
    keys = {"WANDB_MODE": "offline", "WANDB_DIR": str(root), "WANDB_CACHE_DIR": str(root / "cache"),
            "WANDB_CONFIG_DIR": str(root / "config"), "WANDB_DATA_DIR": str(root / "data"),
            "WANDB_SILENT": "true"}
    saved = {k: os.environ.get(k) for k in keys}
    os.environ.update(keys)
    try:
        yield root
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def load_run(folder: Path):
    """Read a run folder through HourTab's W&B importer (issue 5), as the CLI and the web app do."""
    import incidents.wandb as importer

    loader = getattr(importer, "load_run", None)
    if loader is not None:
        return loader(folder)
    from incidents.wandb.runfolder import read_run_folder

    return read_run_folder(folder)
