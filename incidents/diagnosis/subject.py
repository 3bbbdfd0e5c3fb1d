"""The prepared input of every rule: one run, its histogram statistics, and optional comparisons.

Preparing once keeps each rule a pure function of a ``Subject`` and keeps the histogram pass (the
only costly part) from being repeated per rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from incidents.diagnosis import signals


@dataclass(frozen=True)
class Subject:
    run: Any
    stats: pd.DataFrame
    baseline: Any | None = None
    profile: signals.ProfileFacts | None = None
    #: Why the profile was set aside (a different model), stated in the report; None when it fits.
    profile_mismatch: str | None = None

    @property
    def run_label(self) -> str:
        return getattr(self.run, "run_id", "") or getattr(self.run, "name", "") or "run"

    def kind(self, kind: str) -> pd.DataFrame:
        return self.stats[self.stats["kind"] == kind]

    @property
    def watch_log(self) -> str | None:
        kinds = set(self.stats["kind"].unique()) if not self.stats.empty else set()
        if {"gradients", "parameters"} <= kinds:
            return "all"
        return next(iter(kinds), None)

    @property
    def histogram_interval(self) -> int | None:
        return signals.histogram_interval(self.stats["step"].to_numpy()) if not self.stats.empty else None


def prepare(run: Any, baseline: Any | None = None, profile: dict[str, Any] | None = None,
            profile_source: str = "profile") -> Subject:
    """Compute histogram statistics and read the profile, setting it aside if it is another model's."""
    stats = signals.histogram_stats(getattr(run, "histograms", None))
    log = None
    if not stats.empty:
        kinds = set(stats["kind"].unique())
        log = "all" if {"gradients", "parameters"} <= kinds else next(iter(kinds))
    interval = signals.histogram_interval(stats["step"].to_numpy()) if not stats.empty else None
    facts = signals.profile_facts(profile, profile_source, log, interval)
    mismatch = None
    if facts is not None and facts.parameter_tensors and not stats.empty:
        run_tensors = stats[stats["kind"] == "gradients"]["tensor"].nunique() or stats["tensor"].nunique()
        if run_tensors != facts.parameter_tensors:
            mismatch = (f"{profile_source} profiles a different model ({facts.model_name or 'unnamed'}, "
                        f"{facts.parameter_tensors} parameter tensors; this run's watch logged {run_tensors}), "
                        "so its figures were not used")
            facts = None
    return Subject(run, stats, baseline, facts, mismatch)
