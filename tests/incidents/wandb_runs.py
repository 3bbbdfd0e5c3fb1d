"""Helpers for tests that make real W&B offline runs: an isolated offline environment, and reading back."""

from __future__ import annotations

from pathlib import Path

from tests.factories import offline_wandb

__all__ = ["load_run", "offline_wandb"]


def load_run(folder: Path):
    """Read a run folder through HourTab's W&B importer (issue 5), as the CLI and the web app do."""
    import incidents.evidence.wandb as importer

    loader = getattr(importer, "load_run", None)
    if loader is not None:
        return loader(folder)
    from incidents.evidence.wandb.runfolder import read_run_folder

    return read_run_folder(folder)
