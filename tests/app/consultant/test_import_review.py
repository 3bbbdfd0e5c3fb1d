"""The import pages' review: time zone line, diff preview, history of waiting uploads, per-row removal."""

from __future__ import annotations

import re

from sqlalchemy import select

from hourtab.timesheets.models import TimeEntry
from tests.helpers.consultant_forms import upload
from tests.helpers.forms import post_form
from tests.helpers.paths import DATA

ISTANBUL = (DATA / "exports/toggl_istanbul_month_end.csv").read_bytes()
FLORES = (DATA / "toggl_floresfdev_2017-08.csv").read_bytes()


def make_retainer(app, client: str, timezone: str) -> int:
    with app.app_context():
        from app.db import get_db
        from hourtab.core import accounts
        from hourtab.core.db import transaction
        from hourtab.retainers import service

        db = get_db()
        me = accounts.get_account(db, "consultant@example.com")
        with transaction(db):
            retainer = service.create_retainer(db, me, f"{client} retainer", client, service.parse_terms(
                service.TermsInput(hours="20", start="2024-01-01", timezone=timezone)))
        return retainer.id


def preview_of(client, data: bytes, **fields) -> tuple[str, str]:
    r = upload(client, data, **fields)
    url = r.headers["Location"]
    return url, client.get(url).get_data(as_text=True)


def test_the_zone_chosen_on_the_preview_reads_the_times_there(app, logged_in):
    """The file is read in the account's zone (UTC here) until the preview's one zone control says
    otherwise; a retainer chosen for the upload does not change the clock the file was written on."""
    retainer = make_retainer(app, "Baykar", "Europe/Istanbul")
    url, html = preview_of(logged_in, ISTANBUL, retainer=str(retainer))
    assert re.search(r'read as <strong id="upload-timezone">UTC</strong> time \(your account&#39;s time zone\)', html)
    assert "<td>2024-10-31 22:30:00</td>" in html  # shown as the export wrote it
    upload_id = int(re.search(r"/imports/(\d+)/preview", url).group(1))
    assert len(re.findall(r'<select id="timezone" name="timezone">', html)) == 1
    r = post_form(logged_in, f"/imports/{upload_id}/options", {"timezone": "Europe/Istanbul", "retainer": str(retainer)},
                  page=url)
    html = logged_in.get(r.headers["Location"]).get_data(as_text=True)
    assert re.search(r'read as <strong id="upload-timezone">Europe/Istanbul</strong> time \(chosen for this upload\)',
                     html)
    assert '<option value="Europe/Istanbul" selected>' in html
    assert "<td>2024-10-31 22:30:00</td>" in html
    post_form(logged_in, f"/imports/{upload_id}/confirm", {}, page=url)
    with app.app_context():
        from app.db import get_db

        entry = get_db().scalars(select(TimeEntry).order_by(TimeEntry.start_at)).first()
        assert entry.start_at.isoformat() == "2024-10-31T19:30:00+00:00"
        assert entry.local_date.isoformat() == "2024-10-31" and entry.timezone == "Europe/Istanbul"


def test_without_a_choice_the_account_zone_is_used_and_said(app, logged_in):
    _, html = preview_of(logged_in, ISTANBUL)
    assert "read as <strong id=\"upload-timezone\">UTC</strong> time (your account&#39;s time zone)" in html
    assert "<td>2024-10-31 22:30:00</td>" in html


def test_a_toggl_export_is_read_in_the_toggl_profiles_zone_and_the_preview_warns(app, logged_in):
    with app.app_context():
        from app.db import get_db
        from hourtab.core import accounts
        from hourtab.core.db import transaction
        from hourtab.timesheets.zone import remember_tracker_zone

        db = get_db()
        with transaction(db):
            me = accounts.get_account(db, "consultant@example.com")
            remember_tracker_zone(db, me.id, "toggl", "Europe/Berlin", "Toggl Track", "Ada")
    _, html = preview_of(logged_in, ISTANBUL)
    assert re.search(r'read as <strong id="upload-timezone">Europe/Berlin</strong> time \(the zone of your '
                     r"Toggl Track profile \(Ada\)", html)
    warning = re.search(r'<p class="warning" id="zone-warning">(.*?)</p>', html).group(1)
    assert "Your account&#39;s time zone (UTC) is not your Toggl Track profile&#39;s (Europe/Berlin)" in warning
    assert '<option value="" selected>Europe/Berlin: the zone of your Toggl Track profile' in html


def test_the_summary_line_names_the_zone_every_row_was_read_in(app, logged_in):
    """A retainer in New York takes Client 1's rows; the summary's zone is the one the rows carry."""
    make_retainer(app, "Client 1", "America/New_York")
    url, html = preview_of(logged_in, FLORES)
    summary = re.search(r"· times in ([^<]*)</p>", html).group(1).strip()
    upload_id = int(re.search(r"/imports/(\d+)/preview", url).group(1))
    post_form(logged_in, f"/imports/{upload_id}/confirm", {}, page=url)
    with app.app_context():
        from app.db import get_db

        read_in = sorted({e.timezone for e in get_db().scalars(select(TimeEntry))})
    assert summary == ", ".join(read_in) == "UTC"


def test_waiting_and_refused_uploads_are_in_the_history(app, logged_in):
    ambiguous = (DATA / "timetrackers/clockify/solidtime_clockify_time_entries_import_test_1.csv").read_bytes()
    upload(logged_in, ambiguous, "ambiguous.csv")
    upload(logged_in, (DATA / "exports/toggl_summary_report.csv").read_bytes(), "summary.csv")
    history = logged_in.get("/imports/history").get_data(as_text=True)
    assert re.search(r'data-status="needs_date_order">.*?ambiguous\.csv.*?waiting for a date order', history, re.S)
    assert re.search(r'data-status="refused">.*?summary\.csv.*?refused: This is a summary report', history, re.S)


def test_diff_preview_then_per_row_removal_with_hours_and_undo(app, logged_in):
    url, _ = preview_of(logged_in, FLORES)
    first = int(re.search(r"/imports/(\d+)/preview", url).group(1))
    post_form(logged_in, f"/imports/{first}/confirm", {}, page=url)
    lines = FLORES.decode().splitlines(keepends=True)
    client_two = [line for line in lines[1:] if ",Client 2," in line]
    edited = "".join([lines[0], *client_two[2:]]).replace("Misc updates", "Misc updates (edited)", 1)
    url, html = preview_of(logged_in, edited.encode())
    assert "2 to review for removal" in html and "1 changed" in html
    assert re.search(r"description: <span class=\"diff-old\">Misc updates</span> → "
                     r"<span class=\"diff-new\">Misc updates \(edited\)</span>", html)
    assert "Client 1" not in html.split('id="diff-removal"')[1].split("</table>")[0]
    second = int(re.search(r"/imports/(\d+)/preview", url).group(1))
    post_form(logged_in, f"/imports/{second}/confirm", {}, page=url)
    detail = logged_in.get(f"/imports/{second}").get_data(as_text=True)
    ids = re.findall(r'name="entry" value="(\d+)"', detail)
    assert len(ids) == 2 and 'id="diff-changed"' in detail  # the diff is kept on the import's page
    review = logged_in.get(f"/imports/{second}/remove?entry={ids[0]}").get_data(as_text=True)
    assert re.search(r"Removing 1 entry takes <strong>\d+:\d\d h</strong> off the ledger", review)
    r = post_form(logged_in, f"/imports/{second}/remove", {"entry": ids[0]}, page=f"/imports/{second}")
    detail = logged_in.get(r.headers["Location"]).get_data(as_text=True)
    assert "Removed 1 entry" in detail and 'id="restore"' in detail
    assert re.findall(r'name="entry" value="(\d+)"', detail) == [ids[1]]
    # After a removal the page says what became of the flagged rows, in the singular where it is one.
    assert "flagged, not removed" not in detail and "these 1 entries" not in detail
    assert "Undo: restore this entry" in detail
    state = " ".join(re.search(r'<p id="removal-state">(.*?)</p>', detail, re.S).group(1).split())
    assert state.startswith("This import flagged these 2 entries for review; an import never removes entries "
                            "by itself. 1 still counts (review it above); 1 was removed.")
    post_form(logged_in, f"/imports/{second}/restore", {}, page=f"/imports/{second}")
    detail = logged_in.get(f"/imports/{second}").get_data(as_text=True)
    assert sorted(re.findall(r'name="entry" value="(\d+)"', detail)) == sorted(ids)
