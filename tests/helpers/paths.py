"""Where the tests' sample files live (``tests/data/``, provenance in ``tests/data/PROVENANCE.md``)."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data"
