"""Helpers for tests that make real W&B offline runs: an isolated offline environment, and reading back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.factories import offline_wandb

__all__ = ["closed_log", "descend", "load_run", "offline_wandb", "run_folder", "sdk_run"]


@contextmanager
def sdk_run(root: Path, name: str, config: dict | None = None, project: str = "hourtab-tests") -> Iterator:
    """A real offline run written by the W&B SDK under ``root`` (inside ``offline_wandb``).

    Leaving the block finishes the run and waits for its exit record, so the folder is complete
    when the test reads it; ``run_folder(run)`` names the folder.
    """
    import wandb

    run = wandb.init(project=project, name=name, dir=str(root), mode="offline", config=config or {},
                     settings=wandb.Settings(silent=True, console="off", x_disable_stats=True))
    folder = run_folder(run)
    try:
        yield run
    finally:
        run.finish()
    closed_log(folder)


def run_folder(run) -> Path:
    """The ``run-<time>-<id>`` folder the SDK writes a run into."""
    return Path(run.dir).parent


def descend(optimizer, loss) -> float:
    """One optimiser step on ``loss``; returns the loss as a number for ``run.log``."""
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


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
