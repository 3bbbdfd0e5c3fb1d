"""Real-looking exports (tests/data/exports, hand-made in each tracker's layout): totals rows,
seconds, summaries, files without a header, short rows, unclosed quotes, missing durations."""

from __future__ import annotations

import pytest

from hourtab.core.db import transaction
from hourtab.imports.importer import import_file
from hourtab.timesheets import read_timesheet
from hourtab.timesheets.errors import AmbiguousDateOrder, UnreadableFile
from hourtab.timesheets.reader import export_format
from tests.helpers.paths import DATA

EXPORTS = DATA / "exports"


def read(name: str, **kwargs):
    return read_timesheet((EXPORTS / name).read_bytes(), **kwargs)


def test_kimai_seconds_and_totals_footer_are_read_exactly():
    frame, report = read("kimai_seconds_with_footer.csv")
    assert report.format == "kimai" and not report.errors
    assert frame["duration_s"].tolist() == [5400, 5400, 1200, 4500, 13500, 16920, 2700]
    assert report.total_seconds == 49620 and report.entries == 7
    assert "in whole seconds (7 of 7 agree with From to To)" in report.explanation
    assert report.warnings == ["line 9: a totals row (Duration '[00]:00'), not a time entry; skipped"]


def test_kimai_seconds_disagreeing_with_from_to_are_warned():
    text = (EXPORTS / "kimai_seconds_with_footer.csv").read_text().replace('"5400","150.00"', '"9000","150.00"', 1)
    _, report = read_timesheet(text.encode())
    assert report.total_seconds == 49620 + 3600
    assert any(w.startswith("line 2: duration 2:30:00 but start to end is 1:30:00") for w in report.warnings)


def test_kimai_import_is_exact(db_session, account):
    with transaction(db_session):
        result = import_file(db_session, account, (EXPORTS / "kimai_seconds_with_footer.csv").read_bytes(),
                             "kimai.csv")
    assert result.new == 7 and result.report.total_seconds == 49620 and result.skipped == 0


def test_toggl_summary_is_refused_with_the_reason():
    with pytest.raises(UnreadableFile, match="This is a summary report — export the Detailed report"):
        read("toggl_summary_report.csv")


def test_clockify_summary_by_day_imports_with_a_warning():
    frame, report = read("clockify_summary_by_day.csv", date_order="mdy")
    assert report.entries == 4 and report.total_seconds == int(25.75 * 3600)
    assert report.format_label == "Clockify summary report (by day)"
    assert "project and client are absent" in report.warnings[0]
    assert "line 6: a totals row (Time (h) '25:45:00')" in report.warnings[1]
    assert set(frame["project"]) == {""}


def test_file_without_its_header_line_says_so():
    with pytest.raises(UnreadableFile) as info:
        read("clockify_detailed_no_header.csv")
    message = str(info.value)
    assert message.startswith("The file has no header line") and "twice" not in message


def test_file_resaved_as_one_quoted_column_says_so():
    with pytest.raises(UnreadableFile) as info:
        read("clockify_resaved_one_column.csv", format="clockify")
    message = str(info.value)
    assert "re-saved it as a single column" in message and "needs the column" not in message


def test_short_rows_missing_only_optional_fields_are_accepted():
    frame, report = read("toggl_short_rows.csv")
    assert frame["line"].tolist() == [2, 3, 4]
    assert frame["duration_s"].tolist() == [3600, 5400, 1200]
    assert "2 rows ended before the last columns" in report.warnings[0]
    [error] = report.errors
    assert (error.line, error.column) == (5, "Duration") and "11 of 14 fields" in error.message


def test_unclosed_quote_names_line_and_column_and_swallows_nothing_silently():
    frame, report = read("toggl_unclosed_quote.csv")
    [error] = report.errors
    assert (error.line, error.column) == (3, "Description")
    assert "line 4 was read into it" in error.message
    assert frame["line"].tolist() == [2, 5]


def test_clockify_detailed_without_durations_uses_start_and_end():
    frame, report = read("clockify_detailed_no_durations.csv")
    assert report.format == "clockify"
    assert frame["duration_s"].tolist() == [75 * 60, 75 * 60]
    assert "durations from Start Time to End Time" in report.explanation
    [error] = report.errors
    assert (error.line, error.column) == (4, "End Time")


def test_istanbul_times_are_local_and_stored_in_utc():
    frame, report = read("toggl_istanbul_month_end.csv", timezone="Europe/Istanbul")
    first = frame.iloc[0]
    assert str(first["start_at"]) == "2024-10-31 19:30:00+00:00"
    assert str(first["local_date"].date()) == "2024-10-31"
    assert report.timezone == "Europe/Istanbul"


def test_quote_never_closed_names_the_lines_it_swallowed():
    text = (EXPORTS / "toggl_unclosed_quote.csv").read_text().replace('"Weekly sync"', "Weekly sync")
    frame, report = read_timesheet(text.encode())
    [error] = report.errors
    assert (error.line, error.column) == (3, "Description")
    assert "lines 4 to 5 were read into it" in error.message
    assert frame["line"].tolist() == [2]


def test_subtotal_rows_are_skipped_but_an_undated_entry_is_reported():
    lines = (EXPORTS / "kimai_seconds_with_footer.csv").read_text().splitlines(keepends=True)
    subtotal = '"","","","14520","","","ACME Labs","","","Subtotal ACME Labs","","","",""\n'
    undated = '"","10:00","11:00","3600","","ada","Globex","Eval harness","Dev","Forgot the date","0","","",""\n'
    text = "".join([*lines[:5], subtotal, *lines[5:8], undated, *lines[8:]])
    frame, report = read_timesheet(text.encode())
    assert report.total_seconds == 49620 and len(frame) == 7
    assert report.warnings[:2] == ["line 6: a totals row (Duration '14520'), not a time entry; skipped",
                                   "line 11: a totals row (Duration '[00]:00'), not a time entry; skipped"]
    [error] = report.errors
    assert (error.line, error.column, error.message) == (10, "Date", "the date is missing")


@pytest.mark.parametrize("path", sorted([*EXPORTS.glob("*.csv"), *(DATA / "timetrackers").glob("*/*.csv")]),
                         ids=lambda p: p.name)
def test_the_header_alone_names_the_format_the_whole_read_finds(path):
    """The importer picks the zone to read an export in from its tracker, named by the header alone."""
    data = path.read_bytes()
    try:
        found = read_timesheet(data)[1].format
    except AmbiguousDateOrder as e:  # read as far as the dates: the format is known
        found = e.report.format
    except UnreadableFile:
        pytest.skip("a file the reader refuses (its own tests say why)")
    assert export_format(data) == found
