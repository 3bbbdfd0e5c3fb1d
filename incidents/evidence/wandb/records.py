"""Reading a ``.wandb`` file's records: each one that passes its checksum is decoded with the SDK's
protobufs and fed to a ``run_fold.RunFold``, which builds the RunEvidence. Record kinds we use:
``run``, ``environment``, ``telemetry``, ``config``, ``history``, ``summary``, ``stats``, ``exit``,
and the console (``output_raw``, ``output`` before wandb 0.13); the rest (files, requests) are
decoded and counted past.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from google.protobuf.message import DecodeError
from wandb.proto.wandb_internal_pb2 import Record

from incidents.errors import InvalidEvidence
from incidents.evidence.wandb.evidence import RunEvidence
from incidents.evidence.wandb.framing import Cursor, iter_records
from incidents.evidence.wandb.run_fold import RunFold

#: Histogram rows kept in memory (watch(log="all", log_freq=1) on BERT makes 402 a step);
#: beyond it histograms are still counted, and a warning says how many were not kept.
DEFAULT_HISTOGRAM_LIMIT = 100_000


def iter_decoded(path: str | Path, warnings: list[str], cursor: Cursor | None = None,
                 ) -> Iterator[tuple[int, Record]]:
    """Every record that passes its checksum and decodes, with its byte offset (from ``cursor`` on)."""
    from_string = Record.FromString
    for offset, payload in iter_records(path, warnings, cursor):
        try:
            yield offset, from_string(payload)
        except DecodeError:
            warnings.append(_undecodable(offset))


def fold_records(fold: RunFold, path: str | Path, warnings: list[str], cursor: Cursor | None = None) -> None:
    """Feed ``fold`` every record of ``path`` that passes its checksum and decodes (from ``cursor`` on)."""
    feed = fold.feed_payload
    for offset, payload in iter_records(path, warnings, cursor):
        try:
            feed(payload)
        except DecodeError:
            warnings.append(_undecodable(offset))


def _undecodable(offset: int) -> str:
    return f"record at byte {offset} passed its checksum but is not a W&B record; skipped"


class NoReadableRecord(InvalidEvidence):
    """A ``.wandb`` file from which not one run, history or system record could be read."""


def read_wandb_file(path: str | Path, *, histogram_limit: int = DEFAULT_HISTOGRAM_LIMIT) -> RunEvidence:
    """Read one ``run-<id>.wandb`` file into a RunEvidence (history, system, histograms, facts).

    Damage is handled by one rule: a file with no readable run, history or system record is
    refused (``NoReadableRecord``), since storing it would store an empty run; a damaged or
    truncated file that still yields records is kept, with a warning naming each damaged place.
    """
    folder = RunFold(histogram_limit)
    warnings: list[str] = []
    fold_records(folder, path, warnings)
    if folder.empty:
        why = f": {warnings[0]}" if warnings else " (it holds the header and nothing else)"
        raise NoReadableRecord(f"{Path(path).name} has no readable run, history or system record{why}; "
                               "refused")
    return folder.finish(warnings, release=True)
