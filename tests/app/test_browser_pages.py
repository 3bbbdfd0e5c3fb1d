"""Must show 5 (issue 19): every consultant and public page in Chromium at a phone's 390 px and a
desktop's 1280 px: nothing wider than the screen, axe-core (WCAG 2.0/2.1 A and AA) finds nothing,
and no chart text is drawn smaller than 11 CSS px.

One browser, one context per width, each page loaded once per width: the suite runs on a loaded
two-core machine. The data are real: a team export of our own (three people, two clients, three
months) read by the importer, a published incident built from the shipped reproducer runs.
axe-core is the copy bundled in the ``axe-playwright-python`` package (the ``dev`` extra).
"""

from __future__ import annotations

import datetime as dt
import io
import os
import re
from pathlib import Path

import pytest

from tests.helpers.browser import AXE_TAGS, WIDE
from tests.helpers.forms import PASSWORD
from tests.helpers.hours import team_export

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDTHS = (390, 1280)
NOW = dt.datetime(2017, 10, 20, 12, tzinfo=dt.UTC)   # August and September closed, October open


@pytest.fixture
def app(tmp_path, sqlite_template):
    """The layout does not depend on the database: one (SQLite) keeps the browser suite short."""
    import shutil

    from app import create_app

    path = tmp_path / "pages.db"
    shutil.copyfile(sqlite_template, path)
    app = create_app({"HOURTAB_DATA_DIR": str(tmp_path / "data"), "HOURTAB_DATABASE_URL": f"sqlite:///{path}",
                      "HOURTAB_SMTP_URL": "smtp://127.0.0.1:9", "TESTING": True})
    app.config["HOURS_CLOCK"] = lambda: NOW
    yield app
    app.extensions["hourtab.engine"].dispose()


def _data(app, tmp_path: Path) -> dict:
    """Every kind of object a page shows, made through the services."""
    from app.db import get_db
    from app.jobs.broker import start
    from hourtab.alerts import service as alerts
    from hourtab.core import accounts, apitokens
    from hourtab.core.blobs import blob_store
    from hourtab.core.db import transaction
    from hourtab.imports import importer, uploads
    from hourtab.retainers import credits, service
    from incidents.evidence.sample_data import REPRO_TINY, repro_tiny_runs
    from incidents.writeups import service as incidents

    with app.app_context():
        db = get_db()
        with transaction(db):
            me = accounts.create_account(db, "pages@example.com", PASSWORD, plan="pro",
                                         display_name="Ada Consultant")
            me.contact = "hours@ada.example"
        with transaction(db):
            # The name Toggl gives its exports: one long word that must not widen the import's page.
            imported = importer.import_file(db, me, team_export(), "Toggl_time_entries_2017-08-01_to_2017-10-19.csv")
            retainer = service.create_retainer(db, me, "ML platform retainer", "Client 1", service.parse_terms(
                service.TermsInput(hours="30", start="2017-08-01", timezone="Europe/Istanbul",
                                   rollover="all")))
            credits.add_credit(db, me, retainer.id, "topup", "2017-09-04", "5", "Prepaid block")
            other = service.create_retainer(db, me, "Support", "Client 2", service.parse_terms(
                service.TermsInput(hours="10", start="2017-08-01", timezone="UTC")))
        with transaction(db):
            again = io.BytesIO(team_export().replace(b"Tuning run 3 ", b"Tuning run three "))
            staged = uploads.stage_csv(db, me, again, "team-again.csv", app.extensions["hourtab.blobs"],
                                       created_by=me.email)
        blobs = blob_store(Path(app.config["DATA_DIR"]))
        runs = repro_tiny_runs()
        with transaction(db):
            incident = incidents.create_incident(db, me.id, "Slow fine-tuning", retainer.id)
            for role, mode in (("incident", "watch:all:1"), ("baseline", "baseline")):
                ev = incidents.ingest_run_path(db, me.id, runs[mode], blobs)
                incidents.attach_run(db, incident, ev.id, role)
            incidents.attach_profile(db, incident, *incidents.read_profile(REPRO_TINY / "profile.json"))
            incidents.refresh_generated(db, incident, blobs, "Ada")
            incidents.publish(db, incident)
        with transaction(db):
            sub = alerts.subscribe(db, retainer, "client@example.org")
            apitokens.create(db, me.id, "Invoicing script")  # the settings page lists it
        job = start(db, me.id, "alerts_check", {})
        from sqlalchemy import select

        from hourtab.timesheets.models import TimeEntry

        entries = db.scalars(select(TimeEntry.id).where(TimeEntry.upload_id == imported.upload_id)
                             .order_by(TimeEntry.id).limit(2)).all()
        return {"retainer": retainer.id, "other": other.id, "token": retainer.public_token,
                "upload": imported.upload_id, "staged": staged.id, "incident": incident.id,
                "slug": incident.slug, "evidence": ev.id, "job": job.id, "sub": sub.token,
                "entries": "&".join(f"entry={i}" for i in entries)}


def _pages(d: dict) -> dict[str, list[str]]:
    t = f"/h/{d['token']}"
    return {
        "public": [t, f"{t}/incidents/{d['slug']}", f"/alerts/confirm/{d['sub']}",
                   f"/alerts/unsubscribe/{d['sub']}", "/h/no-such-page", "/", "/login", "/signup"],
        "consultant": [
            "/dashboard", "/retainers", f"/retainers/{d['retainer']}", f"/retainers/{d['retainer']}/edit",
            "/retainers/new", f"/retainers/{d['retainer']}/token/rotate", f"/retainers/{d['retainer']}/token/disable",
            "/imports", "/imports/history", f"/imports/{d['upload']}", f"/imports/{d['staged']}/preview",
            f"/imports/{d['staged']}/mapping", f"/imports/{d['upload']}/remove?{d['entries']}",
            "/evidence", f"/evidence/{d['evidence']}", "/incidents", f"/incidents/{d['incident']}",
            f"/incidents/{d['incident']}/preview", f"/jobs/{d['job']}",
            "/account/settings", "/account/password", "/account/plan"],
    }


#: Pages whose tables must fit a phone whole: a column scrolled out of sight is a column the reader misses
#: (the client's page; the consultant's overview). Data tables elsewhere scroll in a focusable region.
WHOLE_TABLES = re.compile(r"/h/[\w-]+|/dashboard|/retainers")

#: Every table wrapper whose content is wider than the wrapper (scrolled sideways).
SCROLLED = """() => [...document.querySelectorAll('.table-wrap')]
  .filter(w => w.offsetParent !== null && w.scrollWidth > w.clientWidth + 1)
  .map(w => (w.getAttribute('aria-label') || w.className) + ' ' + w.scrollWidth + '/' + w.clientWidth)"""

#: The size of every chart text on the page, in CSS px as drawn: inline SVG text measured by the
#: browser; in SVG images (data: URIs) the text's size in the image scaled by the width the image is
#: shown at. Matplotlib writes image text as glyph paths, each label a ``<g id="text_N">`` holding
#: ``scale(s -s)`` with ``s`` the font size / 100.
CHART_TEXT = """() => {
  const sizes = [];
  for (const t of document.querySelectorAll('svg text')) {
    if (!t.getBoundingClientRect().width) continue;          // the drawing for the other width
    const ctm = t.ownerSVGElement.getScreenCTM();
    sizes.push({what: 'svg ' + t.textContent, px: parseFloat(getComputedStyle(t).fontSize) * (ctm ? ctm.a : 1)});
  }
  for (const img of document.querySelectorAll('img[src^="data:image/svg+xml"]')) {
    if (!img.clientWidth) continue;
    const doc = new DOMParser().parseFromString(atob(img.src.split(',')[1]), 'image/svg+xml');
    const root = doc.documentElement;
    const box = (root.getAttribute('viewBox') || '').split(/[ ,]+/).map(Number);
    const scale = img.clientWidth / (box[2] || parseFloat(root.getAttribute('width')));
    for (const el of doc.querySelectorAll('text')) {
      const m = /font(?:-size)?:\\s*([\\d.]+)px/.exec(el.getAttribute('style') || '');
      if (m) sizes.push({what: img.alt + ': ' + el.textContent, px: parseFloat(m[1]) * scale});
    }
    for (const g of doc.querySelectorAll('g[id^="text_"] g[transform*="scale("]')) {
      const m = /scale\\(([\\d.]+)/.exec(g.getAttribute('transform'));
      const label = (g.parentNode.firstChild && g.parentNode.firstChild.nodeType === 8)
        ? g.parentNode.firstChild.textContent.trim() : g.parentNode.id;
      if (m) sizes.push({what: img.alt + ': ' + label, px: parseFloat(m[1]) * 100 * scale});
    }
  }
  return sizes;
}"""


def test_every_page_fits_passes_axe_and_draws_readable_charts(app, live_server, browser, tmp_path):
    from axe_playwright_python.sync_playwright import Axe

    d = _data(app, tmp_path)
    pages = _pages(d)
    axe = Axe()
    problems: list[str] = []
    measured: dict[str, float | None] = {}
    keep_shots = bool(os.environ.get("HOURTAB_KEEP_SCREENSHOTS"))   # every page, to look at (else failures only)
    # The pages that draw charts: the burn-up on the client's page, the report's charts (images).
    charted = {pages["public"][0], pages["public"][1], pages["consultant"][pages["consultant"].index(
        f"/incidents/{d['incident']}/preview")]}
    for width in WIDTHS:
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        for audience in ("public", "consultant"):
            if audience == "consultant":
                page.goto(f"{live_server}/login")
                page.fill("#email", "pages@example.com")
                page.fill("#password", PASSWORD)
                page.click("button[type=submit]")
                page.wait_for_url(f"{live_server}/dashboard")
            for path in pages[audience]:
                page.goto(f"{live_server}{path}")
                overflow = page.evaluate("document.documentElement.scrollWidth")
                if overflow > width:
                    problems.append(f"{width}px {path}: page is {overflow}px wide: {page.evaluate(WIDE, width)}")
                result = axe.run(page, options={"runOnly": {"type": "tag", "values": AXE_TAGS},
                                                "resultTypes": ["violations"]})
                for v in result.response["violations"]:
                    targets = [" ".join(n["target"]) for n in v["nodes"]][:3]
                    problems.append(f"{width}px {path}: axe {v['id']} ({v['impact']}) on {targets}")
                sizes = page.evaluate(CHART_TEXT)
                if path in charted and not sizes:
                    problems.append(f"{width}px {path}: no chart text found to measure")
                measured[f"{width}px {path}"] = min((s["px"] for s in sizes), default=None)
                small = [s for s in sizes if s["px"] < 11]
                if small:
                    problems.append(f"{width}px {path}: chart text {small[0]['px']:.1f}px ({small[0]['what']!r}), "
                                    f"{len(small)} labels under 11px")
                if width < 400 and WHOLE_TABLES.fullmatch(path):
                    scrolled = page.evaluate(SCROLLED)
                    if scrolled:
                        problems.append(f"{width}px {path}: table scrolled sideways: {scrolled}")
                if (problems and problems[-1].startswith(f"{width}px {path}:")) or keep_shots:
                    page.screenshot(path=str(tmp_path / f"{width}-{re.sub(r'[^a-z0-9]+', '-', path)}.png"),
                                    full_page=True)
        if width == WIDTHS[-1]:
            # Printed, the client's page keeps the figures and drops the subscribe form and the downloads.
            page.goto(f"{live_server}{pages['public'][0]}")
            page.emulate_media(media="print")
            if page.locator("#alerts").is_visible() or page.locator("#exports").is_visible():
                problems.append("print: the subscribe form or the downloads are printed")
            if not page.locator("#headline").is_visible() or not page.locator("#periods").is_visible():
                problems.append("print: the headline or the previous periods are not printed")
        context.close()
    (tmp_path / "problems.txt").write_text("\n".join(problems))
    print("smallest chart text (CSS px):", {k: round(v, 1) for k, v in measured.items() if v is not None})
    assert not problems, "\n".join(problems)
