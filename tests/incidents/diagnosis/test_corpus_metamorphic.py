"""Metamorphic tests on the corpus: changes that must never turn a right verdict into a wrong one.

An evaluation-only row, an idle GPU on the node, a foreign GPU beside the run's named GPUs, and
keys written as another SDK version writes them leave every verdict as the table says. A file cut
at a random byte holds less evidence: a finding may go missing or become undetermined, but none
the table does not list may appear (a cut that leaves nothing readable is refused with a clear
error, which is not a verdict).
"""

from __future__ import annotations

import shutil
import tarfile

import pytest

from incidents.diagnosis import diagnose
from incidents.errors import InvalidEvidence
from incidents.evidence.wandb import load_run
from tests.helpers.corpus import Tally, archive, expected, judge
from tests.incidents.diagnosis.corpus_transforms import TRANSFORMS

TABLE = expected()


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    """Each corpus run unpacked once; a transform works on a copy."""
    root = tmp_path_factory.mktemp("corpus")
    for name in TABLE:
        with tarfile.open(archive(name)) as t:
            t.extractall(root / name, filter="data")
    return root


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
def test_no_transform_turns_a_right_verdict_wrong(transform, extracted, tmp_path):
    tally, applied = Tally(), 0
    cut = transform == "truncate"
    for name, want in TABLE.items():
        folder = tmp_path / name
        shutil.copytree(extracted / name, folder)
        if not TRANSFORMS[transform](folder):
            continue
        applied += 1
        try:
            run = load_run(folder)
        except InvalidEvidence:
            assert cut, f"{name}: {transform} made the run unreadable"
            continue
        tally.add(judge(run, diagnose(run), want, facts=not cut, less_evidence=cut, added_gpu=transform.endswith("_gpu")))
    assert applied >= {"foreign_gpu": 15, "idle_gpu": 25}.get(transform, 40)
    assert tally.wrong == []
    if not cut:
        assert tally.missed == []
