"""Must-show 1: ``csv inspect --json`` on every real sample gives its format and the exact total.

The expected total is computed here independently, with the csv module and ``Decimal``, from each
file's own duration column; the importer's vectorised parser must agree to the second.
"""

from __future__ import annotations

import csv
import io
import json
from decimal import ROUND_HALF_UP, Decimal

import pytest
from click.testing import CliRunner

from app.cli import cli
from tests.helpers.timesheet_samples import sample_dir

#: Format by file-name prefix, and the column each format totals.
EXPECTED_FORMAT = {
    "toggl/": "toggl",
    "clockify/damirarh": "clockify-shared",
    "clockify/": "clockify",
    "harvest/": "harvest",
}
DURATION_COLUMN = {"toggl": "Duration", "clockify": "Duration (h)", "clockify-shared": "Time (h)",
                   "harvest": "Hours"}
CSV_FILES = sorted(p.relative_to(sample_dir()).as_posix() for p in sample_dir().glob("*/*.csv"))


def expected_format(relative: str) -> str:
    return next(fmt for prefix, fmt in EXPECTED_FORMAT.items() if relative.startswith(prefix))


def seconds_of(cell: str) -> int:
    cell = cell.strip()
    if ":" in cell:
        parts = [int(p) for p in cell.split(":")] + [0]
        return parts[0] * 3600 + parts[1] * 60 + parts[2]
    if "," in cell:  # decimal comma, dot thousands ("2.000,0")
        cell = cell.replace(".", "").replace(",", ".")
    return int((Decimal(cell) * 3600).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def independent_total(data: bytes, column: str) -> int:
    rows = csv.DictReader(io.StringIO(data.decode("utf-8-sig"), newline=""))
    return sum(seconds_of(row[column]) for row in rows)


def test_every_csv_sample_is_covered():
    assert len(CSV_FILES) == 12, CSV_FILES


@pytest.mark.parametrize("relative", CSV_FILES)
def test_inspect_json_format_and_total_match_the_files_own_duration_column(relative):
    path = sample_dir() / relative
    fmt = expected_format(relative)
    expected = independent_total(path.read_bytes(), DURATION_COLUMN[fmt])
    runner = CliRunner()
    result = runner.invoke(cli, ["csv", "inspect", "--json", str(path)])
    out = json.loads(result.stdout)
    assert out["format"] == fmt
    assert out["total_seconds"] == expected
    if result.exit_code == 2:
        # Only files whose every date reads both ways (03/04/2024) may stop; they must say how to choose.
        assert "--date-order" in out["errors"][0]["message"]
        result = runner.invoke(cli, ["csv", "inspect", "--json", "--date-order", "mdy", str(path)])
        out = json.loads(result.stdout)
        assert out["format"] == fmt and out["total_seconds"] == expected
    assert result.exit_code == 0, result.output
    assert out["errors"] == []
    assert out["entries"] == out["rows"] > 0
    assert list(out) == ["format", "encoding", "delimiter", "rows", "entries", "total_seconds", "total_hours",
                         "first_date", "last_date", "clients", "projects", "warnings", "errors"]


def test_watson_json_is_refused_clearly():
    path = next(sample_dir().glob("watson/*.json"))
    result = CliRunner().invoke(cli, ["csv", "inspect", "--json", str(path)])
    assert result.exit_code == 2
    assert "JSON file, not a CSV" in json.loads(result.stdout)["errors"][0]["message"]
