"""The rules on 46 real public runs (tests/data/runs): 0 wrong verdicts and 0 missed findings.

Each run's expected verdicts were written in ``expected.csv`` from its records before the rules
ran on it. The corpus is read once per module; a few runs also go through the evidence store on
SQLite and PostgreSQL and must keep their verdicts there.
"""

from __future__ import annotations

import re

import pytest

from hourtab.core.blobs import LocalBlobStore
from hourtab.core.db import transaction
from incidents.diagnosis import RULES, diagnose
from incidents.evidence import store
from incidents.evidence.wandb import load_run
from tests.factories import make_account
from tests.helpers.corpus import Tally, archive, expected, judge

TABLE = expected()


@pytest.fixture(scope="module")
def corpus():
    runs = {name: load_run(archive(name)) for name in TABLE}
    return {name: (run, diagnose(run)) for name, run in runs.items()}


def test_the_corpus_covers_what_the_method_asks(corpus):
    versions = sorted({tuple(int(x) for x in w.sdk.split(".")[:2]) for w in TABLE.values()})
    assert len(TABLE) >= 40 and versions[0] == (0, 8) and versions[-1] >= (0, 25)
    endings = {w.ending.split(":")[0] for w in TABLE.values()}
    assert {"crashed", "interrupted", "finished", "unfinished"} <= endings
    fired = {rule for w in TABLE.values() for rule in w.fired}
    assert {"crash", "exploding_gradients", "quality_collapse", "overfitting", "model_not_on_gpu",
            "clean_but_stuck", "dead_layer"} <= fired
    assert sum(1 for w in TABLE.values() if not w.fired and not w.undetermined) >= 10      # healthy runs
    multi = [n for n, (run, _) in corpus.items() if len({c.split(".")[2] for c in run.system.columns
                                                         if re.fullmatch(r"system\.gpu\.\d+\.gpu", c)}) > 1]
    assert len(multi) >= 10
    kinds = {k for run, _ in corpus.values() for k, n in (run.histogram_counts or {}).items() if n}
    assert {"gradients", "parameters", "logged_gradients", "logged_parameters"} <= kinds


def test_every_verdict_on_the_corpus_is_the_tables(corpus, capsys):
    tally = Tally()
    for name, (run, findings) in corpus.items():
        tally.add(judge(run, findings, TABLE[name]))
    expected_findings = sum(len(w.fired) + len(w.undetermined) for w in TABLE.values())
    with capsys.disabled():
        print(f"\ncorpus: {len(TABLE)} runs, {tally.total} verdicts expected ({len(RULES)} rules, ending and GPUs a "
              f"run; {expected_findings} findings), {tally.right} right, {len(tally.wrong)} wrong, "
              f"{len(tally.missed)} missed")
    assert tally.wrong == [] and tally.missed == []
    assert tally.total == len(TABLE) * (len(RULES) + 2)


STORED = ("unet-handlogged-interrupted-0.13", "roberta-task-keys-0.17", "reversal-gpu2-of-7-0.16",
          "tictactoe-save-crash-0.8", "unet-nan-interrupted-0.13")


def test_runs_stored_in_the_database_keep_their_verdicts(db_session, tmp_path):
    """Ingested as their archives, loaded back from Parquet and the facts JSON (no re-parse)."""
    account = make_account(db_session, "corpus@example.com")
    blobs = LocalBlobStore(tmp_path / "blobs")
    tally = Tally()
    for name in STORED:
        with transaction(db_session):
            [(row, _)] = store.ingest_path(db_session, account.id, archive(name), blobs)
        loaded = store.evidence_from_row(store.get_evidence(db_session, account.id, row.id), blobs)
        tally.add(judge(loaded, diagnose(loaded), TABLE[name]))
    assert tally.wrong == [] and tally.missed == []
