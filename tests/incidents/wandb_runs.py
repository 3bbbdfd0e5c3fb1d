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


def closed_log(folder: Path, timeout: float = 60.0) -> Path:
    """The run's ``.wandb`` file once the SDK has written its exit record.

    ``run.finish()`` can return before the W&B service has flushed the file on a loaded machine, so a
    test that reads or rewrites the records waits for the condition (the exit record), not a time.
    """
    import time

    from incidents.evidence.wandb.records import iter_decoded

    deadline = time.monotonic() + timeout
    while True:
        logs = sorted(Path(folder).glob("run-*.wandb"))
        if logs and any(r.WhichOneof("record_type") == "exit" for _, r in iter_decoded(logs[0], [])):
            return logs[0]
        if time.monotonic() > deadline:
            raise TimeoutError(f"{Path(folder).name}: no exit record after {timeout:.0f} s")
        time.sleep(0.1)
