"""The real tracker exports the importer tests read (copied into ``tests/data/timetrackers``, provenance beside them)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.paths import DATA

TRACKERS = DATA / "timetrackers"


def sample(relative: str) -> bytes:
    return (TRACKERS / relative).read_bytes()


def sample_dir() -> Path:
    """The real exports copied into tests/data (provenance beside them)."""
    return TRACKERS
