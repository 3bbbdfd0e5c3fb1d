"""read_timesheet on each layout, encoding and delimiter the issue lists (no database)."""

from __future__ import annotations

import pandas as pd
import pytest

from hourtab.timesheets import read_timesheet
from hourtab.timesheets.errors import AmbiguousDateOrder
from tests.factories import TOGGL_HEADER, toggl_row
from tests.helpers.timesheet_samples import sample

# Kimai files below are SYNTHETIC: written here in the layout of Kimai's CSV export
# (Date, From, To, Duration, Rate, User, Customer, Project, Activity, Description, Exported, Tags).
KIMAI_EN = ("Date,From,To,Duration,Rate,User,Customer,Project,Activity,Description,Exported,Tags\n"
            "2024-05-02,09:00,10:30,1:30,150.00,ada,ACME,Model audit,Analysis,Looked at loss curves,No,\"ml,audit\"\n"
            "2024-05-02,23:30,00:45,1:15,125.00,ada,ACME,Model audit,On call,Night page,No,\n")
KIMAI_DE = ("Datum;Von;Bis;Dauer;Preis;Benutzer;Kunde;Projekt;Tätigkeit;Beschreibung;Exportiert;Schlagworte\n"
            "02.05.2024;09:00;10:30;1,5;150,00;ada;ACME;Audit;Analyse;Überprüfung;Nein;\n"
            "14.05.2024;13:00;13:20;0,33;33,00;ada;ACME;Audit;Analyse;Kurz;Nein;\n")
KIMAI_SECONDS = ("Date,From,To,Duration,User,Customer,Project,Activity,Description\n"
                 "2019-03-01,09:00,10:00,3600,ada,ACME,P,A,old Kimai\n"
                 "2019-03-02,09:00,09:00,0,ada,ACME,P,A,zero\n")


def test_toggl_real_export_is_exact_and_timezone_aware():
    frame, report = read_timesheet(sample("toggl/floresfdev_toggl-dashboard_Toggl_time_entries_2017-08-01_to_"
                                          "2017-08-31.csv"), timezone="Europe/Madrid")
    first = frame.iloc[0]
    assert first["start_at"] == pd.Timestamp("2017-08-01 13:10:43", tz="UTC")  # 15:10:43 CEST
    assert first["duration_s"] == 25 * 60 + 20
    assert str(first["local_date"].date()) == "2017-08-01"
    assert report.explanation.startswith("Toggl Track detailed report, dates YYYY-MM-DD, 24 h times")
    assert frame["fingerprint"].is_unique


def test_clockify_ddmmyyyy_midnight_crossing_and_turkish_text():
    frame, report = read_timesheet(sample("clockify/metaplm_Clockify_Time_Report_Detailed_01_01_2026-31_12_2026.csv"))
    assert report.format == "clockify" and report.date_order == "dmy"
    crossing = frame[frame["start_at"].dt.date != frame["end_at"].dt.date].iloc[0]
    assert crossing["duration_s"] == 66 * 60 and crossing["project"] == "STEP & PDF Converter"
    assert "Baykar Teknoloji Yerinde Çalışma" in report.projects


def test_clockify_12h_times_without_seconds_and_activity_column():
    frame, report = read_timesheet(sample("clockify/solidtime_clockify_time_entries_import_test_5.csv"),
                                   date_order="mdy")
    assert frame["task"].tolist() == ["", "Task 1"]
    assert frame["start_at"].iloc[1] == pd.Timestamp("2024-03-04 10:23:00", tz="UTC")
    assert "12 h times" in report.explanation


def test_clockify_dotted_dates_12h_and_hmm_durations():
    text = ("Project,Client,Description,Task,User,Email,Tags,Billable,Start Date,Start Time,End Date,End Time,"
            "Duration (h),Duration (decimal)\r\n"
            "P,C,d,,Ada,a@x,,Yes,05.03.2024,9:15 PM,05.03.2024,10:45 PM,1:30,1.50\r\n"
            "P,C,d,,Ada,a@x,,No,06.03.2024,11:50 PM,07.03.2024,12:20 AM,0:30,0.50\r\n")
    frame, report = read_timesheet(text.encode())
    assert frame["duration_s"].tolist() == [5400, 1800]
    assert frame["start_at"].iloc[1] == pd.Timestamp("2024-03-06 23:50", tz="UTC")
    assert "DD.MM.YYYY" in report.explanation and "12 h" in report.explanation
    assert frame["billable"].tolist() == [True, False]


def test_clockify_decimal_duration_column_only():
    text = ("Project,Client,Description,User,Start Date,Duration (decimal)\n"
            "P,C,d,Ada,2024-03-05,0.1\nP,C,d,Ada,2024-03-05,7.25\n")
    frame, _ = read_timesheet(text.encode())
    assert frame["duration_s"].tolist() == [360, 26100]


def test_clockify_shared_report():
    frame, report = read_timesheet(sample("clockify/damirarh_ClockifyExport_shared_report_Clockify.csv"))
    assert report.format == "clockify-shared"
    assert frame["start_at"].isna().all() and (frame["duration_s"] > 0).all()


def test_harvest_decimal_comma_and_names():
    frame, report = read_timesheet(sample("harvest/solidtime_harvest_time_entries_import_test_1.csv"))
    assert frame["duration_s"].tolist() == [72000, 36]
    assert frame["user_name"].tolist() == ["Peter Tester", "Peter Tester"]
    assert "',' decimal separator" in report.explanation


def test_harvest_dotted_dates_and_thousands():
    text = ('Date,Client,Project,Project Code,Task,Notes,Hours,Billable?,First Name,Last Name\n'
            '24.12.2024,C,P,,T,"Notiz, mit Komma","1.000,5",Yes,Ada,L\n')
    frame, _ = read_timesheet(text.encode())
    assert frame["duration_s"].tolist() == [1000 * 3600 + 1800]
    assert frame["description"].tolist() == ["Notiz, mit Komma"]


def test_kimai_english_crosses_midnight_and_normalises_tags():
    frame, report = read_timesheet(KIMAI_EN.encode())
    assert report.format == "kimai"
    assert frame["duration_s"].tolist() == [5400, 4500]
    assert frame["end_at"].iloc[1] == pd.Timestamp("2024-05-03 00:45", tz="UTC")
    assert frame["tags"].tolist() == ["ml, audit", ""]


def test_kimai_german_semicolon_decimal_hours():
    frame, report = read_timesheet(KIMAI_DE.encode("cp1252"))
    assert report.format == "kimai" and report.delimiter == ";"
    assert frame["duration_s"].tolist() == [5400, 1188]
    assert frame["description"].tolist() == ["Überprüfung", "Kurz"]
    # 0,33 h is 1188 s but 13:00-13:20 is 1200 s: within a minute, so no warning
    assert report.warnings == []


def test_kimai_seconds_durations_of_old_versions():
    frame, report = read_timesheet(KIMAI_SECONDS.encode())
    assert frame["duration_s"].tolist() == [3600, 0]
    assert "seconds" in report.explanation


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "cp1252"])
def test_encodings(encoding):
    text = TOGGL_HEADER + toggl_row("2024-01-02", "09:00:00", "10:00:00", "01:00:00", description="Café crème")
    frame, report = read_timesheet(text.encode(encoding))
    assert frame["description"].tolist() == ["Café crème"]
    assert frame["duration_s"].tolist() == [3600]


@pytest.mark.parametrize("delimiter", [",", ";", "\t"])
def test_delimiters(delimiter):
    text = (TOGGL_HEADER + toggl_row("2024-01-02", "09:00:00", "10:00:00", "01:00:00")).replace(",", delimiter)
    frame, report = read_timesheet(text.encode())
    assert report.delimiter == delimiter and frame["duration_s"].tolist() == [3600]


def test_toggl_entry_crossing_midnight_and_quoted_newline_keeps_line_numbers():
    text = (TOGGL_HEADER + toggl_row("2024-01-02", "23:00:00", "01:30:00", "02:30:00", end_day="2024-01-03")
            + 'Ada,a@x,C,P,,"two\nlines",No,2024-01-03,09:00:00,2024-01-03,09:10:00,00:10:00,,\n'
            + toggl_row("2024-01-03", "10:00:00", "11:00:00", "-01:00:00"))
    frame, report = read_timesheet(text.encode())
    assert frame["duration_s"].tolist() == [9000, 600]
    assert frame["description"].tolist()[1] == "two\nlines"
    assert [(e.line, e.column) for e in report.errors] == [(5, "Duration")]


def test_duration_disagreeing_with_start_end_by_over_a_minute_is_a_warning():
    text = TOGGL_HEADER + toggl_row("2024-01-02", "09:00:00", "09:30:00", "01:00:00")
    frame, report = read_timesheet(text.encode())
    assert frame["duration_s"].tolist() == [3600]
    assert report.warnings == ["line 2: duration 1:00:00 but start to end is 0:30:00; the duration is used"]


def test_ambiguous_dates_stop_and_show_both_readings():
    text = ("Project,Client,Description,User,Start Date,Start Time,End Date,End Time,Duration (h)\n"
            "P,C,d,Ada,03/04/2024,09:00,03/04/2024,10:00,01:00:00\n"
            "P,C,d,Ada,05/04/2024,09:00,05/04/2024,10:00,01:00:00\n")
    with pytest.raises(AmbiguousDateOrder) as info:
        read_timesheet(text.encode())
    readings = {e.value: (e.dmy, e.mdy) for e in info.value.examples}
    assert readings["03/04/2024"] == ("3 April 2024", "4 March 2024")
    assert "--date-order" in str(info.value)
    assert info.value.report.total_seconds == 7200
    frame, _ = read_timesheet(text.encode(), date_order="dmy")
    assert str(frame["local_date"].iloc[1].date()) == "2024-04-05"


def test_day_above_twelve_decides_the_order():
    text = ("Project,Client,Description,User,Start Date,Duration (h)\n"
            "P,C,d,Ada,03/04/2024,01:00:00\nP,C,d,Ada,03/25/2024,01:00:00\n")
    frame, report = read_timesheet(text.encode())
    assert report.date_order == "mdy"
    assert [str(d.date()) for d in frame["local_date"]] == ["2024-03-04", "2024-03-25"]


def test_entry_crossing_midnight_settles_an_otherwise_ambiguous_order():
    text = ("Project,Client,Description,User,Start Date,Start Time,End Date,End Time,Duration (h)\n"
            "P,C,d,Ada,03/04/2024,23:00,03/05/2024,01:00,02:00:00\n")
    frame, report = read_timesheet(text.encode())
    assert report.date_order == "mdy" and "cross midnight" in report.explanation


def test_mapped_csv_with_datetime_columns():
    text = "When,Until,What,Customer\n2024-02-01 09:00,2024-02-01 10:15,Review,ACME\n"
    mapping = {"start": "When", "end": "Until", "description": "What", "client": "Customer"}
    frame, report = read_timesheet(text.encode(), mapping=mapping, timezone="America/New_York")
    assert report.format == "mapped"
    assert frame["duration_s"].tolist() == [4500]
    assert frame["start_at"].iloc[0] == pd.Timestamp("2024-02-01 14:00", tz="UTC")


def test_mapped_csv_with_minutes():
    text = "Day;Minutes;Note\n2024-02-01;90;x\n"
    frame, _ = read_timesheet(text.encode(), mapping={"date": "Day", "duration": "Minutes", "description": "Note"},
                              duration_unit="minutes")
    assert frame["duration_s"].tolist() == [5400]


def _clean_rows(n: int) -> list[str]:
    return [toggl_row(f"2024-03-{1 + i % 28:02d}", f"{8 + i % 10:02d}:{i % 60:02d}:05",
                      f"{9 + i % 10:02d}:{i % 60:02d}:05", "01:00:00") for i in range(n)]


def test_times_read_by_the_csv_reader_match_the_text_reading():
    """Start and end columns that look like HH:MM:SS are read as times by pyarrow in its one pass;
    the entries are the same as reading every cell as text and parsing it."""
    from hourtab.timesheets.detect import choose_spec, sniff_header
    from hourtab.timesheets.encoding import to_utf8
    from hourtab.timesheets.normalise import normalise
    from hourtab.timesheets.reader import clock_columns
    from hourtab.timesheets.table import read_body

    data = (TOGGL_HEADER + "".join(_clean_rows(60))).encode()
    decoded = to_utf8(data)
    header = sniff_header(decoded.head())
    spec = choose_spec(header.columns, "auto")
    clocks = clock_columns(spec, header.columns, header.delimiter, decoded.head())
    assert clocks == {header.columns.index("Start time"), header.columns.index("End time")}
    typed = read_body(decoded.utf8, header.columns, header.delimiter, clocks=clocks)
    assert str(typed.table.column(min(clocks)).type) == "time32[s]"
    text = read_body(decoded.utf8, header.columns, header.delimiter)
    a = normalise(typed, header.columns, spec, timezone="Europe/Berlin")
    b = normalise(text, header.columns, spec, timezone="Europe/Berlin")
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert (a.time_style, a.issues, a.warnings) == (b.time_style, b.issues, b.warnings)


@pytest.mark.parametrize("cell", ["25:00:00", "9:05:00", " 09:05:00x", "09:05:60"])
def test_a_time_the_fast_reading_refuses_is_named_with_its_line_and_column(cell):
    rows = _clean_rows(40)
    rows[30] = toggl_row("2024-03-30", cell, "23:00:00", "01:00:00")
    frame, report = read_timesheet((TOGGL_HEADER + "".join(rows)).encode())
    if cell == "9:05:00":  # a valid time written without its leading zero: read, not refused
        assert report.errors == [] and len(frame) == 40
        assert frame.loc[frame["line"] == 32, "start_at"].iloc[0] == pd.Timestamp("2024-03-30 09:05:00", tz="UTC")
    else:
        [issue] = report.errors
        assert (issue.line, issue.column, issue.message) == (32, "Start time", "not a time of day")
        assert len(frame) == 39
