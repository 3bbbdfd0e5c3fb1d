"""Typed errors of the time-sheet importer.

Every problem a file can have is one of these, each an ``InvalidInput`` (HTTP 400) except the
size refusal (``PayloadTooLarge``, 413). A row problem carries the physical line, the column, the
value and what was expected, so the consultant can open the file and fix exactly that cell.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from hourtab.core.errors import InvalidInput, PayloadTooLarge

#: How many bad rows a refusal lists; the count of all of them is always given.
MAX_LISTED_ERRORS = 50


@dataclass(frozen=True)
class RowIssue:
    """One problem with one cell (or one whole row when ``column`` is empty)."""

    line: int | None
    column: str
    value: str
    message: str
    expected: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "file"
        col = f", column {self.column!r}" if self.column else ""
        value = f" (value {self.value!r})" if self.value else ""
        expected = f"; expected {self.expected}" if self.expected else ""
        return f"{where}{col}: {self.message}{value}{expected}"


class TimesheetError(InvalidInput):
    """Base of every error the importer raises on purpose."""


class CsvTooLarge(PayloadTooLarge, TimesheetError):
    """The file is over the configured limit; it was not parsed."""

    def __init__(self, size: int, limit: int, *, streamed: bool = False) -> None:
        # A file refused while it streams in was not read to its end: only "over the limit" is known.
        told = (f"The file is larger than {limit / 1048576:.0f} MiB, the limit for time-tracker CSVs" if streamed
                else f"The file is {size / 1048576:.1f} MiB; the limit for time-tracker CSVs is "
                     f"{limit / 1048576:.0f} MiB")
        super().__init__(f"{told} (setting HOURTAB_CSV_MAX_MB). Export a shorter date range.")
        self.size = size
        self.limit = limit


class UnreadableFile(TimesheetError):
    """Not a CSV at all: empty, binary, a PDF or spreadsheet renamed, undecodable."""


class CsvRowError(TimesheetError):
    """A single bad cell or row, with the line, column, value and what was expected."""

    def __init__(self, issue: RowIssue) -> None:
        super().__init__(str(issue))
        self.issue = issue
        self.line = issue.line
        self.column = issue.column
        self.value = issue.value
        self.expected = issue.expected


class RowsRejected(TimesheetError):
    """The file has bad rows and the caller did not ask to import only the valid ones."""

    def __init__(self, issues: list[RowIssue], total: int | None = None) -> None:
        self.total = len(issues) if total is None else total
        self.issues = issues[:MAX_LISTED_ERRORS]
        first = str(self.issues[0]) if self.issues else ""
        more = f" (and {self.total - 1} more)" if self.total > 1 else ""
        super().__init__(f"The file was not imported: {self.total} bad row{'s' if self.total != 1 else ''}. "
                         f"First: {first}{more}. Fix them, or choose to import only the valid rows.")


class UnknownFormat(TimesheetError):
    """The columns match no known tracker; a column mapping (import profile) is needed."""

    def __init__(self, columns: list[str], detail: str = "") -> None:
        self.columns = columns
        shown = ", ".join(columns[:20])
        super().__init__(f"Could not recognise this CSV's columns ({shown}). {detail}".rstrip()
                         + " Map the columns to date, duration, … with an import profile.")


class UnknownRetainer(TimesheetError):
    """The retainer an upload is recorded for does not exist or belongs to another account."""

    def __init__(self, retainer_id: int | str) -> None:
        self.retainer_id = retainer_id
        super().__init__(f"No retainer {retainer_id} in this account; nothing was imported. "
                         "`hourtab ledger` and the Retainers page list your retainers' ids.")


class MappingInvalid(TimesheetError):
    """A column mapping names columns the file lacks, or lacks the fields an entry needs."""


@dataclass(frozen=True)
class DateReading:
    """How one raw date reads day-first and month-first."""

    value: str
    dmy: str | None
    mdy: str | None


class AmbiguousDateOrder(TimesheetError):
    """No day in the file is above 12: both readings are valid, so we stop and ask."""

    def __init__(self, columns: list[str], examples: list[DateReading], report: Any = None) -> None:
        self.columns = columns
        self.examples = examples
        self.report = report
        shown = "; ".join(f"{e.value} = {e.dmy or 'invalid'} (day first) or {e.mdy or 'invalid'} (month first)"
                          for e in examples[:3])
        super().__init__(f"The dates in {', '.join(columns)} can be read day-first or month-first: {shown}. "
                         "Choose the order: --date-order dmy or --date-order mdy (in the web form: 'Date order').")
