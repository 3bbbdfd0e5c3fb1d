"""The reproducer output shipped with HourTab (tiny preset), used by the demo and the tests.

The web install has no torch, so the demo cannot run the reproducer; it ingests this real output
instead (see ``samples/repro-tiny/PROVENANCE.md``). Each shipped mode's W&B run folder is kept as a
``.tar.gz`` archive — the same shape a consultant uploads — to keep the repository small.
"""

from __future__ import annotations

import json
from pathlib import Path

REPRO_TINY = Path(__file__).resolve().parent / "samples" / "repro-tiny"


def repro_tiny_runs() -> dict[str, Path]:
    """Mode (e.g. ``watch:all:1``) → archive of its W&B run, for the modes whose run is shipped."""
    profile = json.loads((REPRO_TINY / "profile.json").read_text())
    runs = {}
    for mode in profile["modes"]:
        if mode.get("wandb_run"):
            archive = REPRO_TINY / f"{mode['wandb_run']['dir']}.tar.gz"
            if archive.is_file():
                runs[mode["mode"]] = archive
    return runs
