"""The corpus of real public runs (tests/data/runs) and its table of expected verdicts.

Every rule's outcome on a run is one verdict (fired with its class, undetermined, or quiet), and so
are how the run ended and which GPUs were judged: a run has ``len(RULES) + 2`` verdicts. A verdict
is *wrong* when the rules say something the table does not (a finding it does not list, another
class, another ending or GPUs) and *missed* when the table lists a finding the rules do not give.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from incidents.diagnosis import RULES, signals
from tests.helpers.paths import DATA

RUNS = DATA / "runs"


@dataclass(frozen=True)
class Expected:
    run: str
    sdk: str
    fired: dict[str, str]
    undetermined: frozenset[str]
    ending: str
    gpus: str
    why: str

    def state(self, rule: str) -> str:
        if rule in self.fired:
            return f"fired:{self.fired[rule]}"
        return "undetermined" if rule in self.undetermined else "quiet"


@dataclass
class Tally:
    """Verdicts checked against the table, with what went wrong where."""

    right: int = 0
    wrong: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.right + len(self.wrong) + len(self.missed)

    def add(self, other: Tally) -> None:
        self.right += other.right
        self.wrong += other.wrong
        self.missed += other.missed


def expected() -> dict[str, Expected]:
    with open(RUNS / "expected.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    return {r["run"]: Expected(r["run"], r["sdk"], dict(p.split(":", 1) for p in r["fired"].split(";") if p),
                               frozenset(p for p in r["undetermined"].split(";") if p), r["ending"], r["gpus"],
                               r["why"]) for r in rows}


def archive(name: str) -> Path:
    return RUNS / f"{name}.tar.gz"


def observed_ending(run: Any) -> str:
    ending = getattr(run, "ending", None) or {}
    how = ending.get("how") or ""
    return f"{how}:{ending.get('cause') or ''}" if how == "crashed" else how


def observed_gpus(run: Any) -> str:
    gpus = signals.run_gpus(run)
    return "none" if gpus.how == "none" else f"{gpus.how}:" + ";".join(str(i) for i in gpus.gpus)


def state(finding: Any) -> str:
    if finding.fired:
        return f"fired:{finding.cls}"
    return "undetermined" if finding.undetermined else "quiet"


def same_gpus(seen: str, expect: str, added: bool) -> bool:
    """The run's GPUs as the table names them; with ``added`` (a GPU put on the node after the
    fact), the new GPU joins an all-idle node, a node's only GPU becomes the one holding memory, and
    an undetermined attribution stays undetermined (a truly idle GPU beside them can show that GPUs
    with a little memory hold it)."""
    if seen == expect or not added:
        return seen == expect
    (how, _, ids), (want_how, _, want_ids) = seen.partition(":"), expect.partition(":")
    have, want = set(ids.split(";")), set(want_ids.split(";"))
    if want_how == "undetermined":   # still not determined; an idle GPU may show others' GPUs holding memory
        return how == "undetermined" and want <= have
    if how == "idle":      # an all-idle node (its only GPU idle, or every GPU) with one more idle GPU
        return want_how in ("idle", "only") and want <= have and len(have) == len(want) + 1
    return have == want and (how == want_how or (want_how == "only" and how == "memory"))


def judge(run: Any, findings: list, want: Expected, *, facts: bool = True, less_evidence: bool = False,
          added_gpu: bool = False) -> Tally:
    """Check one run's findings (and, with ``facts``, its ending and GPUs) against the table.

    With ``less_evidence`` (a run cut short), a verdict the table lists may be missing or
    undetermined, never wrong: a finding the table does not list, or another class, still is.
    """
    tally = Tally()
    got = {f.rule: state(f) for f in findings}
    assert list(got) == list(RULES), f"{want.run}: rules {list(got)}"
    for rule in RULES:
        expect, seen = want.state(rule), got[rule]
        if seen == expect:
            tally.right += 1
        elif seen.startswith("fired") or (seen == "undetermined" and not less_evidence):
            tally.wrong.append(f"{want.run}: {rule} {seen}, table says {expect}")
        else:
            tally.missed.append(f"{want.run}: {rule} {seen}, table says {expect}")
    if facts:
        for what, seen, expect in (("ending", observed_ending(run), want.ending),
                                   ("gpus", observed_gpus(run), want.gpus)):
            if seen == expect or (what == "gpus" and same_gpus(seen, expect, added_gpu)):
                tally.right += 1
            else:
                tally.wrong.append(f"{want.run}: {what} {seen!r}, table says {expect!r}")
    return tally
