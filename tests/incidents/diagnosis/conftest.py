"""Session-scoped pathology runs: trained once with torch + wandb (offline), read back by our importer."""

from __future__ import annotations

import pytest

KINDS = ("exploding", "nonfinite", "vanishing", "dead_layer", "static", "healthy", "stuck")


@pytest.fixture(scope="session")
def pathology_runs(tmp_path_factory):
    """``{kind: RunEvidence}`` for every pathology in ``pathologies.py``."""
    pytest.importorskip("torch")
    from tests.helpers.pathologies import make_run
    from tests.helpers.wandb_runs import load_run, offline_wandb

    root = tmp_path_factory.mktemp("pathologies")
    with offline_wandb(root):
        return {kind: load_run(make_run(kind, root)) for kind in KINDS}
