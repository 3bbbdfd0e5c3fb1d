"""The prepared input of every rule: one run, its histogram statistics, and optional comparisons.

Preparing once keeps each rule a pure function of a ``Subject`` and keeps the histogram pass (the
only costly part) from being repeated per rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from incidents.diagnosis import setup, signals
from incidents.evidence.wandb.evidence import RunEvidence


@dataclass(frozen=True)
class Subject:
    run: RunEvidence
    stats: pd.DataFrame
    baseline: RunEvidence | None = None
    profile: signals.ProfileFacts | None = None
    #: Why the profile was set aside (another setup), stated in the report; None when it fits.
    profile_mismatch: str | None = None
    #: The profile's watch configuration when it differs from the run's (its figures are then scaled).
    profile_watch: setup.WatchConfig | None = None
    #: Incident vs baseline differences (model, hardware, batch…); blocking ones forbid a slowdown.
    baseline_differences: tuple[setup.Difference, ...] = ()
    #: The profile's hook cost scaled to this run's watch configuration: (ms per step, how), or None.
    scaled_hook: tuple[float, str] | None = None
    #: Statistics of gradient and weight histograms the user logged by hand (not wandb.watch).
    logged: pd.DataFrame | None = None
    #: Figures several rules read, computed once per subject (the GPU evidence).
    cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def health(self) -> pd.DataFrame:
        """What the gradient rules read: watch histograms, else the hand-logged ones."""
        if self.stats.empty and self.logged is not None and not self.logged.empty:
            return self.logged
        return self.stats

    @property
    def health_source(self) -> str:
        """How the gradient rules name the histograms they read."""
        if self.health is self.stats:
            return f"{self.run_label} wandb.watch histograms (gradients/*, parameters/*)"
        histograms = self.run.histograms
        keys = sorted({str(k).split("/")[0] for k, kind in zip(histograms["key"], histograms["kind"], strict=True)
                       if kind == "other"}) if histograms is not None and len(histograms) else []
        return f"{self.run_label} hand-logged histograms ({', '.join(k + '/*' for k in keys[:4])})"

    def health_kind(self, kind: str) -> pd.DataFrame:
        health = self.health
        return health[health["kind"] == kind]

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

    @property
    def baseline_comparable(self) -> bool:
        """False when the baseline ran another model or on other hardware: no slowdown from it."""
        return not any(d.blocking for d in self.baseline_differences)

    @property
    def watch_configs_differ(self) -> bool:
        return self.profile_watch is not None


def prepare(run: RunEvidence, baseline: RunEvidence | None = None, profile: dict[str, Any] | None = None,
            profile_source: str = "profile") -> Subject:
    """Compute histogram statistics and check the profile and baseline are of the same setup."""
    stats = signals.histogram_stats(run.histograms)
    label = getattr(run, "run_id", "") or "run"
    watch = setup.run_watch(stats, f"{label} watch histograms")
    facts = signals.profile_facts(profile, profile_source, watch.log, watch.log_freq)
    mismatch, other_watch, estimate = None, None, None
    if facts is not None and profile is not None:
        run_sig = setup.run_signature(run, stats)
        prof_sig = setup.profile_signature(profile, profile_source)
        prof_watch = setup.profile_watch(profile, facts.watch_mode, profile_source)
        differs = setup.signature_mismatch(run_sig, prof_sig, watch, prof_watch)
        if differs:
            mismatch = (f"{profile_source} is from a different setup (it profiles a different model: "
                        f"{'; '.join(differs)}), so its figures were not used")
            facts = None
        elif not stats.empty and setup.watch_differs(watch, prof_watch):
            other_watch = prof_watch
            estimate = setup.scaled_hook_ms(profile, facts.watch_mode, prof_watch, watch)
    differences = tuple(setup.differences(run, baseline)) if baseline is not None else ()
    logged = signals.histogram_stats(run.histograms, logged=True)
    return Subject(run, stats, baseline, facts, mismatch, other_watch, differences, estimate, logged)
