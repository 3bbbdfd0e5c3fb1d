from __future__ import annotations

import pytest

from tests.incidents.evidence.wandb.runs import ensure_runs


@pytest.fixture(scope="session")
def wandb_runs(tmp_path_factory) -> dict:
    """Two real offline runs: ``plain …`` (system metrics sampled every 0.2 s) and ``watched``."""
    return ensure_runs(tmp_path_factory.getbasetemp() / "wandb_runs")
