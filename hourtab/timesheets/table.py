"""The CSV body as string columns with the physical line number of every row.

pyarrow's CSV reader does the parsing (it is pandas' own fast engine and keeps every cell a
string, so nothing is guessed). A row with too few or too many fields is collected, not fatal;
only then is the file scanned once more with the csv module to name those rows' lines, so the
common clean file pays nothing for the error report.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from hourtab.timesheets.cells import Cells
from hourtab.timesheets.errors import RowIssue, UnreadableFile

BLOCK_SIZE = 1 << 22
#: pyarrow's reader threads pay off only with cores to spare; on two cores they cost more than they save.
USE_THREADS = (os.cpu_count() or 1) > 2


@dataclass
class Body:
    table: pa.Table            # one string column per header column, blank rows removed
    lines: np.ndarray          # physical line where each row starts (header is line 1)
    issues: list[RowIssue] = field(default_factory=list)
    blank_rows: int = 0
    notes: list[str] = field(default_factory=list)
    _cells: dict[int, Cells] = field(default_factory=dict, repr=False)

    def has_cells(self, i: int) -> bool:
        return i in self._cells

    def cells(self, i: int) -> Cells:
        """Column ``i`` as distinct trimmed values (``cells.Cells``), encoded once for every reader of it
        (a column read as times, see ``read_body``, as the text of those times; blank where empty)."""
        if i not in self._cells:
            column = self.table.column(i)
            self._cells[i] = Cells.of(column if column.type == pa.string() else pc.cast(column, pa.string()))
        return self._cells[i]


def read_body(utf8: bytes, columns: list[str], delimiter: str, optional: frozenset[int] = frozenset(),
              clocks: frozenset[int] = frozenset()) -> Body:
    """The rows under the header; ``optional`` columns may be missing at the end of a row.

    ``clocks``: columns whose first rows are all ``HH:MM:SS`` times of day. pyarrow reads them as
    ``time32[s]`` in the same pass (its parser checks each field's digits and range, < 24 h, < 60
    min and s, as the normaliser's reading does); a cell it cannot read that way fails the read,
    and the file is read again with every column as text, where the normaliser names that cell.
    """
    names = [f"c{i}" for i in range(len(columns))]
    types = {n: pa.time32("s") if i in clocks else pa.string() for i, n in enumerate(names)}
    try:
        table = pcsv.read_csv(
            pa.BufferReader(utf8),
            read_options=pcsv.ReadOptions(column_names=names, skip_rows=1, block_size=BLOCK_SIZE,
                                           use_threads=USE_THREADS),
            parse_options=pcsv.ParseOptions(delimiter=delimiter, newlines_in_values=True,
                                            ignore_empty_lines=False),
            # ``to_utf8`` has validated (or produced) the UTF-8 already: a second check would cost a pass.
            convert_options=pcsv.ConvertOptions(column_types=types, check_utf8=False,
                                                strings_can_be_null=False, quoted_strings_can_be_null=False),
        )
    except (pa.ArrowInvalid, pa.ArrowException) as e:
        if clocks:  # a time that is not HH:MM:SS after all, or a bad row: read it all as text
            return read_body(utf8, columns, delimiter, optional)
        # Rare: a row with too few or too many fields, or a broken quote. Read again with the csv
        # module, which names each bad row's line (an invalid-row handler would cost every clean
        # file a Python callback hook in pyarrow's reader; the exception costs nothing until then).
        body = _scan(utf8, columns, delimiter, optional)
        if not body.issues:
            raise UnreadableFile(f"The file could not be read as CSV: {e}") from e
        return _without_blank(body)
    table = table.combine_chunks()
    lines, inside = _lines_fast(utf8, table)
    body = Body(table, lines)
    if inside:
        body = _without_swallowed(body, columns, delimiter)
    return _without_blank(body)


def _without_blank(body: Body) -> Body:
    blank = _blank_mask(body)
    if not blank.any():
        return body
    keep = ~blank
    return Body(body.table.filter(pa.array(keep)), body.lines[keep], body.issues, int(blank.sum()), body.notes)


def _swallowed(cell: str, delimiter: str, ncols: int) -> bool:
    """A cell that holds whole rows: an unclosed quote ran on past the end of its line."""
    return "\n" in cell and any(part.count(delimiter) >= max(2, ncols // 2) for part in cell.splitlines())


def _without_swallowed(body: Body, columns: list[str], delimiter: str) -> Body:
    """Rows with an unclosed quote become issues (line and column) instead of merged rows."""
    ncols = len(columns)
    bad = np.zeros(body.table.num_rows, bool)
    issues = list(body.issues)
    for i, col in enumerate(body.table.columns):
        if col.type != pa.string():  # a column read as times holds no newline
            continue
        multi = np.flatnonzero(pc.match_substring(col, "\n").to_numpy(zero_copy_only=False) & ~bad)
        for row, cell in zip(multi, col.take(pa.array(multi)).to_pylist(), strict=True):
            if _swallowed(cell, delimiter, ncols):
                bad[row] = True
                issues.append(_unclosed_issue(int(body.lines[row]), columns[i], cell))
    if not bad.any():
        return body
    issues.sort(key=lambda issue: issue.line or 0)
    return Body(body.table.filter(pa.array(~bad)), body.lines[~bad], issues, body.blank_rows, body.notes)


def _unclosed_issue(line: int, column: str, cell: str) -> RowIssue:
    return RowIssue(line=line, column=column, value=cell.split("\n", 1)[0][:80],
                    message=f"a quoted field is not closed on its line, so line {line + 1} was read into it",
                    expected="a closing quote before the end of the line")


def _blank_mask(body: Body) -> np.ndarray:
    table = body.table
    if table.num_columns == 0 or table.num_rows == 0:
        return np.zeros(table.num_rows, bool)
    mask = np.ones(table.num_rows, bool)
    for i in range(table.num_columns):  # almost always settled by the first column: most rows are not blank
        cells = body.cells(i)
        mask &= cells.rows(pc.equal(pc.utf8_length(cells.values), 0).to_numpy(zero_copy_only=False))
        if not mask.any():
            break
    return mask


def _lines_fast(utf8: bytes, table: pa.Table) -> tuple[np.ndarray, bool]:
    """Line numbers when every row parsed (row i starts after the newlines inside earlier rows),
    and whether any cell holds a newline."""
    n = table.num_rows
    newline = b"\n" if b"\n" in utf8 else b"\r"
    header_end = utf8.find(newline)
    total_newlines = utf8.count(newline)
    trailing = 1 if utf8[-1:] in (b"\r", b"\n") else 0
    base = np.arange(n, dtype=np.int64) + 2
    if total_newlines - trailing == n and utf8[:header_end].count(b'"') % 2 == 0:
        return base, False
    inside = np.zeros(n, np.int64)
    sep = newline.decode()
    for col in table.columns:
        if col.type != pa.string():
            continue
        inside += pc.count_substring(col, sep).to_numpy(zero_copy_only=False)
    if not n:
        return base, False
    return base + np.concatenate([[0], np.cumsum(inside)[:-1]]), bool(inside.any())


def _records(utf8: bytes, delimiter: str) -> Iterator[tuple[int, list[str], str | None]]:
    """(start line, fields) for every record after the header, via the csv module."""
    text = utf8.decode("utf-8", "replace")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    start = 1
    try:
        next(reader)
        start = reader.line_num + 1
        for row in reader:
            yield start, row, None
            start = reader.line_num + 1
    except csv.Error as e:
        yield start, [], str(e)


def _scan(utf8: bytes, columns: list[str], delimiter: str, optional: frozenset[int]) -> Body:
    """The slow, exact reading: every record through the csv module, bad ones as issues."""
    ncols = len(columns)
    lines: list[int] = []
    rows: list[list[str]] = []
    issues: list[RowIssue] = []
    padded = 0
    last_line = utf8.rstrip(b"\r\n").count(b"\n") + 1
    text = utf8.decode("utf-8", "replace")
    for start, row, error in _records(utf8, delimiter):
        if error:
            issues.append(_quote_issue(start, error, text, delimiter, columns, last_line))
            break
        if not row:
            row = [""] * ncols
        elif len(row) < ncols and set(range(len(row), ncols)) <= optional:
            row = row + [""] * (ncols - len(row))
            padded += 1
        if len(row) != ncols:
            issues.append(_field_count_issue(start, row, ncols, columns, start >= last_line))
            continue
        swallowed = next((i for i, cell in enumerate(row) if _swallowed(cell, delimiter, ncols)), None)
        if swallowed is not None:
            issues.append(_unclosed_issue(start, columns[swallowed], row[swallowed]))
            continue
        lines.append(start)
        rows.append(row)
    names = [f"c{i}" for i in range(ncols)]
    table = pa.table({n: pa.array([r[i] for r in rows], pa.string()) for i, n in enumerate(names)})
    notes = [f"{padded} row{'s' if padded != 1 else ''} ended before the last column{'s' if ncols > 1 else ''} "
             "(trailing empty fields left out); the missing optional fields were read as empty"] if padded else []
    return Body(table, np.asarray(lines, np.int64), issues, notes=notes)


def _quote_issue(line: int, error: str, text: str, delimiter: str, columns: list[str], last: int) -> RowIssue:
    lines = text.splitlines()
    physical = lines[line - 1] if line - 1 < len(lines) else ""
    index = _open_quote_field(physical, delimiter)
    column = columns[index] if index is not None and index < len(columns) else ""
    swallowed = f"; lines {line + 1} to {last} were read into it" if last > line else ""
    return RowIssue(line=line, column=column, value=physical[:80],
                    message=f"a quoted field is not closed properly ({error}){swallowed}",
                    expected="every opening quote closed on the same row (is the file cut short?)")


def _open_quote_field(line: str, delimiter: str) -> int | None:
    """Which field of ``line`` opens a quote that the line never closes."""
    field_index, quoted, opened = 0, False, None
    for ch in line:
        if ch == '"':
            quoted = not quoted
            opened = field_index if quoted else opened
        elif ch == delimiter and not quoted:
            field_index += 1
    return opened if quoted else None


def _field_count_issue(line: int, row: list[str], ncols: int, columns: list[str], is_last: bool) -> RowIssue:
    got = len(row)
    if got < ncols:
        missing = columns[got] if got < len(columns) else ""
        why = "the file looks cut short" if is_last else "fields are missing"
        return RowIssue(line=line, column=missing, value=(row[-1] if row else "")[:80],
                        message=f"the row has {got} of {ncols} fields ({why})", expected=f"{ncols} fields")
    return RowIssue(line=line, column="", value=row[ncols][:80] if len(row) > ncols else "",
                    message=f"the row has {got} fields but the header has {ncols} (an unquoted "
                            f"delimiter inside a text?)", expected=f"{ncols} fields")
