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
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

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


def read_body(utf8: bytes, columns: list[str], delimiter: str) -> Body:
    names = [f"c{i}" for i in range(len(columns))]
    bad_rows: list[tuple[int, int, str]] = []

    def _invalid(row) -> str:
        bad_rows.append((row.expected_columns, row.actual_columns, row.text or ""))
        return "skip"

    try:
        table = pcsv.read_csv(
            io.BytesIO(utf8),
            read_options=pcsv.ReadOptions(column_names=names, skip_rows=1, block_size=BLOCK_SIZE,
                                           use_threads=USE_THREADS),
            parse_options=pcsv.ParseOptions(delimiter=delimiter, newlines_in_values=True,
                                            ignore_empty_lines=False, invalid_row_handler=_invalid),
            convert_options=pcsv.ConvertOptions(column_types={n: pa.string() for n in names},
                                                strings_can_be_null=False, quoted_strings_can_be_null=False),
        )
    except (pa.ArrowInvalid, pa.ArrowException) as e:
        issues = _scan_structure(utf8, len(columns), delimiter, columns)
        if issues:
            return Body(pa.table({n: pa.array([], pa.string()) for n in names}), np.zeros(0, np.int64), issues)
        raise UnreadableFile(f"The file could not be read as CSV: {e}") from e

    table = table.combine_chunks()
    if bad_rows:
        lines, issues = _lines_by_scan(utf8, len(columns), delimiter, columns)
        if len(lines) != table.num_rows:  # the two parsers disagree: trust neither, refuse clearly
            raise UnreadableFile("The file's rows could not be counted consistently; "
                                 "check for unbalanced quotes.")
    else:
        lines, issues = _lines_fast(utf8, table), []
    blank = _blank_mask(table)
    if blank.any():
        keep = ~blank
        table = table.filter(pa.array(keep))
        lines = lines[keep]
    return Body(table, lines, issues, int(blank.sum()))


def _blank_mask(table: pa.Table) -> np.ndarray:
    if table.num_columns == 0 or table.num_rows == 0:
        return np.zeros(table.num_rows, bool)
    mask = np.ones(table.num_rows, bool)
    for col in table.columns:  # almost always settled by the first column: most rows are not blank
        mask &= pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(col)), 0).to_numpy(zero_copy_only=False)
        if not mask.any():
            break
    return mask


def _lines_fast(utf8: bytes, table: pa.Table) -> np.ndarray:
    """Line numbers when every row parsed: row i starts after the newlines inside earlier rows."""
    n = table.num_rows
    newline = b"\n" if b"\n" in utf8 else b"\r"
    header_end = utf8.find(newline)
    total_newlines = utf8.count(newline)
    trailing = 1 if utf8[-1:] in (b"\r", b"\n") else 0
    base = np.arange(n, dtype=np.int64) + 2
    if total_newlines - trailing == n and utf8[:header_end].count(b'"') % 2 == 0:
        return base
    inside = np.zeros(n, np.int64)
    sep = newline.decode()
    for col in table.columns:
        inside += pc.count_substring(col, sep).to_numpy(zero_copy_only=False)
    return base + np.concatenate([[0], np.cumsum(inside)[:-1]]) if n else base


def _records(utf8: bytes, delimiter: str):
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


def _lines_by_scan(utf8: bytes, ncols: int, delimiter: str, columns: list[str]) -> tuple[np.ndarray, list[RowIssue]]:
    lines: list[int] = []
    issues: list[RowIssue] = []
    last_line = utf8.rstrip(b"\r\n").count(b"\n") + 1
    for start, row, error in _records(utf8, delimiter):
        if error:
            issues.append(_quote_issue(start, error))
            break
        if len(row) == ncols or not row:
            lines.append(start)
        else:
            issues.append(_field_count_issue(start, row, ncols, columns, start >= last_line))
    return np.asarray(lines, np.int64), issues


def _scan_structure(utf8: bytes, ncols: int, delimiter: str, columns: list[str]) -> list[RowIssue]:
    return _lines_by_scan(utf8, ncols, delimiter, columns)[1]


def _quote_issue(line: int, error: str) -> RowIssue:
    return RowIssue(line=line, column="", value="", message=f"a quoted field is not closed properly ({error})",
                    expected="every opening quote closed on the same row (is the file cut short?)")


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
