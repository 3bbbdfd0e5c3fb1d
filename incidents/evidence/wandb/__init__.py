"""W&B run ingestion: offline run folders, ``.wandb`` logs, API and UI exports → :class:`RunEvidence`.

``load_run(path)`` is the entry point; ``store`` keeps what it parsed so pages never re-parse.
"""

from incidents.evidence.wandb.evidence import RunEvidence
from incidents.evidence.wandb.loader import load_run, load_runs

__all__ = ["RunEvidence", "load_run", "load_runs"]
