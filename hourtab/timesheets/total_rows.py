"""Totals and subtotal rows that trackers append to an export: recognised and left out.

Kimai ends its export with a line of sums (no date, no customer, ``[00]:00`` and the total rate);
Clockify's summary by day and spreadsheets add "Total" rows, and grouped exports "Subtotal" rows. A
row is taken for a total only when it has no date and either no descriptive text at all or a
"Total"/"Subtotal" label; an undated row that describes work stays, and is reported as undated. They are not time entries, and read
as entries they would count every hour twice, so they are dropped before the cells are parsed,
each with a note naming its line.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hourtab.timesheets.cell_parsers import trim
from hourtab.timesheets.cells import Cells
from hourtab.timesheets.spec import FormatSpec
from hourtab.timesheets.table import Body

TOTAL_WORDS = r"(?i)^(sub|grand\s*)?totals?\b|^(zwischen)?summe\b|^gesamt|^totaal\b"
DESCRIPTIVE = ("client", "project", "description", "task", "user", "first_name", "last_name")
MAX_NOTES = 5


def drop_total_rows(body: Body, columns: list[str], spec: FormatSpec) -> tuple[Body, list[str]]:
    """The body without its totals rows, and one note per dropped row (a few, then a count)."""
    found = spec.resolve(columns)
    day_field = next((f for f in ("start_date", "date", "start") if f in found), None)
    table = body.table
    if day_field is None or table.num_rows == 0:
        return body, []
    index = {name: i for i, name in enumerate(columns)}
    day, first = body.cells(index[found[day_field]]), body.cells(0)

    def words(cells: Cells) -> np.ndarray:
        return cells.rows(pc.match_substring_regex(cells.values, TOTAL_WORDS).to_numpy(zero_copy_only=False))

    worded = words(day) | words(first)
    candidates = np.flatnonzero(day.rows(pc.equal(day.values, "").to_numpy(zero_copy_only=False)) | worded)
    if not len(candidates):
        return body, []
    rows = table.take(pa.array(candidates))
    blank_text = np.ones(len(candidates), bool)
    labelled = worded[candidates]
    for name in (found[f] for f in DESCRIPTIVE if f in found):  # a subtotal names its group: "Subtotal ACME"
        cells = trim(rows.column(index[name]).combine_chunks())
        blank_text &= pc.equal(cells, "").to_numpy(zero_copy_only=False)
        labelled |= pc.match_substring_regex(cells, TOTAL_WORDS).to_numpy(zero_copy_only=False)
    total = labelled | blank_text
    if not total.any():
        return body, []
    dropped = candidates[total]
    keep = np.ones(table.num_rows, bool)
    keep[dropped] = False
    shown = found.get("duration") or found[day_field]
    values = trim(table.column(index[shown]).combine_chunks()).take(pa.array(dropped)).to_pylist()
    notes = [f"line {int(body.lines[i])}: a totals row ({shown} {v!r}), not a time entry; skipped"
             for i, v in zip(dropped[:MAX_NOTES], values, strict=False)]
    if len(dropped) > MAX_NOTES:
        notes.append(f"… and {len(dropped) - MAX_NOTES} more totals rows skipped")
    return Body(table.filter(pa.array(keep)), body.lines[keep], body.issues, body.blank_rows), notes
