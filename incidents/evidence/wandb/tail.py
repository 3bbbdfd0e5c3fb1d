"""Reading a ``.wandb`` file while the SDK still writes it: each read decodes only what was appended."""

from __future__ import annotations

from pathlib import Path

from incidents.evidence.wandb.evidence import RunEvidence
from incidents.evidence.wandb.framing import Cursor
from incidents.evidence.wandb.records import DEFAULT_HISTOGRAM_LIMIT, NoReadableRecord, fold_records
from incidents.evidence.wandb.run_fold import RunFold


class LogTail:
    """A ``.wandb`` file still being written, read incrementally.

    Each ``read()`` decodes only the records appended since the previous one, folds them into the
    same columns, and returns the run as it now stands; a record still being written is left for
    the next read. A file that shrank (rewritten from scratch) is read again from its start.
    """

    def __init__(self, path: str | Path, *, histogram_limit: int = DEFAULT_HISTOGRAM_LIMIT) -> None:
        self.path = Path(path)
        self.histogram_limit = histogram_limit
        self._restart()

    def _restart(self) -> None:
        self.cursor = Cursor()
        self._fold = RunFold(self.histogram_limit)
        self._warnings: dict[str, None] = {}  # damage found on earlier reads, once each

    def read(self) -> RunEvidence:
        if self.path.stat().st_size < self.cursor.offset:
            self._restart()
        warnings: list[str] = []
        fold_records(self._fold, self.path, warnings, self.cursor)
        self._warnings.update(dict.fromkeys(warnings))
        if self._fold.empty:
            raise NoReadableRecord(f"{self.path.name} has no readable run, history or system record yet")
        current = list(self._warnings)
        if self.cursor.pending_at is not None:
            current.append(f"the file ends in the middle of a record at byte {self.cursor.pending_at} "
                           "(still being written); records before it were read")
        return self._fold.finish(current)
