"""Each bad input of the issue: a typed error (or a row error naming line and column), never a crash."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from app.cli import cli
from hourtab.core.errors import InvalidInput, PayloadTooLarge
from hourtab.timesheets import read_timesheet
from hourtab.timesheets.errors import CsvRowError, CsvTooLarge, UnknownFormat, UnreadableFile
from tests.factories import TOGGL_HEADER, toggl_row
from tests.helpers.timesheet_samples import sample

GOOD = toggl_row("2024-01-02", "09:00:00", "10:00:00", "01:00:00")


def issues(text: str):
    _, report = read_timesheet(text.encode())
    return [(e.line, e.column, e.value, e.message) for e in report.errors]


@pytest.mark.parametrize("data, message", [
    (b"", "empty"),
    (b"  \r\n", "empty"),
    (TOGGL_HEADER.encode(), "no time entries"),
    (bytes(range(256)) * 40, "binary|not text"),
    (bytes(range(128, 256)) * 40 + b"\x00\x01" * 50, "binary|not text"),
    (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj <<>> endobj\n", "PDF"),
    (b"PK\x03\x04\x14\x00\x06\x00", "Excel"),
    (b'[[1539683175, 1539685649, "project1"]]', "JSON"),
])
def test_unreadable_files(data, message):
    with pytest.raises(UnreadableFile, match=message):
        read_timesheet(data)


def test_unknown_columns_ask_for_a_mapping():
    with pytest.raises(UnknownFormat, match="Map the columns") as info:
        read_timesheet(b"Foo,Bar,Baz\n1,2,3\n")
    assert info.value.columns == ["Foo", "Bar", "Baz"]


def test_duplicated_header_column():
    text = TOGGL_HEADER.replace("Tags", "Project") + GOOD
    with pytest.raises(CsvRowError) as info:
        read_timesheet(text.encode())
    assert info.value.line == 1 and info.value.column == "Project"


def test_header_repeated_inside_the_data():
    assert issues(TOGGL_HEADER + GOOD + TOGGL_HEADER + GOOD)[0][:2] == (3, "")


def test_truncated_last_line_names_line_and_column():
    text = TOGGL_HEADER + GOOD + GOOD[:40]
    found = issues(text)
    assert len(found) == 1
    line, column, _, message = found[0]
    assert line == 3 and column == "Start time" and "cut short" in message


def test_unclosed_quote_at_the_end():
    found = issues(TOGGL_HEADER + GOOD + 'Ada,a@x,C,P,,"never closed,No,2024-01-02')
    assert found[0][0] == 3 and "quoted field" in found[0][3]


def test_row_with_too_many_fields():
    found = issues(TOGGL_HEADER + GOOD + GOOD.replace("Work", "Work, more"))
    assert found[0][0] == 3 and "15 fields" in found[0][3]


def test_thirty_hour_duration_is_exact_and_warned():
    frame, report = read_timesheet((TOGGL_HEADER + toggl_row("2024-01-02", "09:00:00", "15:00:00", "30:00:00",
                                                            end_day="2024-01-03")).encode())
    assert frame["duration_s"].tolist() == [108000]
    assert any("longer than a day" in w for w in report.warnings)


def test_negative_duration():
    assert issues(TOGGL_HEADER + toggl_row("2024-01-02", "09:00:00", "10:00:00", "-01:00:00")) == [
        (2, "Duration", "-01:00:00", "the duration is negative")]


def test_end_before_start():
    assert issues(TOGGL_HEADER + toggl_row("2024-01-02", "10:00:00", "09:00:00", "01:00:00")) == [
        (2, "End time", "09:00:00", "the entry ends before it starts")]


def test_impossible_date():
    text = ("Project,Client,Description,User,Start Date,Duration (h)\n"
            "P,C,d,Ada,31/02/2024,01:00:00\nP,C,d,Ada,13/02/2024,01:00:00\n")
    assert issues(text) == [(2, "Start Date", "31/02/2024", "not a valid date")]


def test_bad_time_and_bad_duration_cells():
    found = issues(TOGGL_HEADER + toggl_row("2024-01-02", "25:00:00", "26:00:00", "1h"))
    assert {(f[1], f[3]) for f in found} == {("Start time", "not a time of day"), ("End time", "not a time of day"),
                                             ("Duration", "not a duration")}


def test_two_hundred_megabyte_file_is_refused_before_parsing():
    data = b"x" * (200 * 1024 * 1024)
    with pytest.raises(CsvTooLarge, match="200.0 MiB") as info:
        read_timesheet(data)
    assert isinstance(info.value, PayloadTooLarge) and isinstance(info.value, InvalidInput)
    with pytest.raises(CsvTooLarge):
        read_timesheet(sample("toggl/solidtime_toggl_time_entries_import_test_1.csv"), max_bytes=100)


def test_cli_refuses_a_200_mb_file_by_its_size_and_honours_the_setting(tmp_path):
    big = tmp_path / "big.csv"
    with open(big, "wb") as f:  # sparse: 200 MiB on paper, nothing on disk, never read
        f.truncate(200 * 1024 * 1024)
    result = CliRunner().invoke(cli, ["csv", "inspect", "--json", str(big)])
    assert result.exit_code == 2 and "HOURTAB_CSV_MAX_MB" in json.loads(result.stdout)["errors"][0]["message"]
    small = tmp_path / "small.csv"
    small.write_bytes((TOGGL_HEADER + GOOD * 2000).encode())
    result = CliRunner().invoke(cli, ["csv", "inspect", str(small)], env={**os.environ, "HOURTAB_CSV_MAX_MB": "0.1"})
    assert result.exit_code == 2 and "limit" in result.output
    assert CliRunner().invoke(cli, ["csv", "inspect", str(small)]).exit_code == 0


def test_cli_corrupt_row_names_line_and_column(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes((TOGGL_HEADER + GOOD + toggl_row("2024-01-03", "09:00:00", "10:00:00", "1:7x")).encode())
    result = CliRunner().invoke(cli, ["csv", "inspect", "--json", str(path)])
    out = json.loads(result.stdout)
    assert result.exit_code == 2
    assert out["errors"] == [{"line": 3, "column": "Duration", "value": "1:7x",
                              "message": "not a duration; expected H:MM:SS, H:MM or decimal hours"}]
    assert out["entries"] == 1 and out["total_seconds"] == 3600


def test_cli_inspect_counts_in_the_singular_and_the_plural(tmp_path):
    one = tmp_path / "one.csv"
    one.write_bytes((TOGGL_HEADER + GOOD).encode())
    assert "1 entry of 1 row," in CliRunner().invoke(cli, ["csv", "inspect", str(one)]).output
    two = tmp_path / "two.csv"
    two.write_bytes((TOGGL_HEADER + GOOD * 2).encode())
    assert "2 entries of 2 rows," in CliRunner().invoke(cli, ["csv", "inspect", str(two)]).output


def test_cli_inspect_of_a_file_without_entries_says_so_instead_of_none_to_none(tmp_path):
    path = tmp_path / "all-bad.csv"
    path.write_bytes((TOGGL_HEADER + toggl_row("2024-01-03", "09:00:00", "10:00:00", "1:7x")).encode())
    result = CliRunner().invoke(cli, ["csv", "inspect", str(path)])
    assert result.exit_code == 2 and "None" not in result.output
    assert "0 entries of 1 row, 0 s (0.0 h), no dates" in result.output
