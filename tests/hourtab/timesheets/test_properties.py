"""Property tests over mangled real samples: only typed errors, and a refusal writes nothing."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hourtab.core.db import transaction
from hourtab.imports.importer import import_file
from hourtab.timesheets import read_timesheet
from hourtab.timesheets.errors import TimesheetError
from tests.helpers.imported import snapshot
from tests.helpers.paths import DATA
from tests.helpers.timesheet_samples import sample

SAMPLES = [
    "toggl/Vages_toggl-til-ubw_Toggl_time_entries_2018-10-08_to_2018-10-14.csv",
    "toggl/solidtime_toggl_time_entries_import_test_2.csv",
    "clockify/metaplm_Clockify_Time_Report_Detailed_01_01_2026-31_12_2026.csv",
    "clockify/solidtime_clockify_time_entries_import_test_2.csv",
    "harvest/solidtime_harvest_time_entries_import_test_1.csv",
]
NASTY = [b",", b";", b"\t", b'"', b"\n", b"\r\n", b"\x00", b"\xff\xfe", b"\xef\xbb\xbf", b":", b"-", b"99",
         b"31/02/2024", b"25:61:61", b"-01:00:00", b"\xc3", b"%PDF", b"2.000,0", b"AM", b"\\"]


#: Hand-made exports with totals rows, short rows and a bad quote (tests/data/exports).
EXPORTS = ["kimai_seconds_with_footer.csv", "toggl_short_rows.csv", "toggl_unclosed_quote.csv",
           "clockify_summary_by_day.csv"]


def seed(draw) -> bytes:
    if draw(st.booleans()):
        return sample(draw(st.sampled_from(SAMPLES)))
    return (DATA / "exports" / draw(st.sampled_from(EXPORTS))).read_bytes()


@st.composite
def mangled(draw) -> bytes:
    data = bytearray(seed(draw))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["insert", "delete", "truncate", "duplicate_line", "replace"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "insert":
            data[pos:pos] = draw(st.sampled_from(NASTY) | st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[pos:pos + draw(st.integers(1, 40))]
        elif kind == "truncate":
            del data[pos:]
        elif kind == "duplicate_line":
            lines = bytes(data).split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            lines.insert(i, lines[i])
            data = bytearray(b"\n".join(lines))
        else:
            data[pos:pos + 1] = draw(st.sampled_from(NASTY))
    return bytes(data)


# derandomize: the same 60 inputs every run. Twice, beside CPU burners, a random run stalled for over
# 40 minutes inside hypothesis's engine (no frame of ours on the stack; 192 seeds run alone never did);
# a fixed set keeps the suite from waiting on that while it still mangles every sample.
@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=mangled(), order=st.sampled_from([None, "dmy", "mdy"]))
def test_reader_raises_only_typed_errors(data, order):
    try:
        frame, report = read_timesheet(data, date_order=order)
    except TimesheetError:
        return
    assert report.entries == len(frame)
    assert report.total_seconds == int(frame["duration_s"].sum())
    assert (frame["duration_s"] >= 0).all()


@pytest.mark.slow
@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=mangled())
def test_refused_import_leaves_the_database_unchanged(db_session, account, data):
    before = snapshot(db_session)
    try:
        with transaction(db_session):
            import_file(db_session, account, data, "mangled.csv")
    except TimesheetError:
        assert snapshot(db_session) == before
