"""Header navigation, confirmed link actions with an undoable disable, and the plan page."""

from __future__ import annotations

import re
from dataclasses import dataclass

from hourtab.billing import UpgradeStep
from tests.helpers.consultant_forms import create_retainer
from tests.helpers.forms import post_form


def _public_path(client, location: str) -> str | None:
    match = re.search(r'readonly value="http://localhost(/h/[^"]+)"', client.get(location).get_data(as_text=True))
    return match.group(1) if match else None


def test_header_links_to_every_consultant_section(logged_in):
    page = logged_in.get("/dashboard").get_data(as_text=True)
    nav = page.split("<nav>", 1)[1].split("</nav>", 1)[0]
    for href in ("/retainers", "/imports", "/evidence", "/incidents", "/account/settings"):
        assert f'href="{href}"' in nav, href


def test_rotate_asks_first_and_only_the_confirmation_changes_the_link(logged_in):
    location = create_retainer(logged_in).headers["Location"]
    url = _public_path(logged_in, location)
    ask = logged_in.get(f"{location}/token/rotate")
    assert ask.status_code == 200 and "Make a new public link?" in ask.get_data(as_text=True)
    assert _public_path(logged_in, location) == url and logged_in.get(url).status_code == 200
    assert post_form(logged_in, f"{location}/token/rotate", {}).status_code == 302
    assert logged_in.get(url).status_code == 404 and _public_path(logged_in, location) != url


def test_disable_asks_first_and_re_enabling_brings_back_the_same_link(logged_in):
    location = create_retainer(logged_in).headers["Location"]
    url = _public_path(logged_in, location)
    assert "Disable the public page?" in logged_in.get(f"{location}/token/disable").get_data(as_text=True)
    assert logged_in.get(url).status_code == 200
    assert post_form(logged_in, f"{location}/token/disable", {}).status_code == 302
    assert logged_in.get(url).status_code == 404
    page = logged_in.get(location).get_data(as_text=True)
    assert "Re-enable the same link" in page
    assert post_form(logged_in, f"{location}/token/enable", {}, page=location).status_code == 302
    assert logged_in.get(url).status_code == 200 and _public_path(logged_in, location) == url


def test_the_free_plan_limit_is_said_before_the_form_is_filled_in(app, logged_in):
    assert 'id="new-retainer"' in logged_in.get("/dashboard").get_data(as_text=True)
    create_retainer(logged_in)
    for page in ("/dashboard", "/retainers"):
        html = logged_in.get(page).get_data(as_text=True)
        assert 'id="new-retainer"' not in html and 'id="see-plans" href="/account/plan"' in html
        assert "The free plan keeps 1 active retainer, and this account has 1." in html
    form = logged_in.get("/retainers/new").get_data(as_text=True)       # opened anyway: said at the top
    assert form.index('id="plan-full"') < form.index('id="name"') and 'id="plan-link"' in form


def test_plan_refusal_points_to_the_plan_page_not_a_shell_command(app, logged_in):
    create_retainer(logged_in)
    r = create_retainer(logged_in, name="Second", client="Client 2")
    text = r.get_data(as_text=True)
    assert r.status_code == 403 and "set-plan" not in text and "hourtab user" not in text
    assert "upgrade to the pro plan" in text and 'href="/account/plan"' in text


def test_upgrade_request_is_confirmed_by_the_operator(app, logged_in):
    from app.db import get_db
    from hourtab.core import accounts
    from hourtab.core.db import transaction

    create_retainer(logged_in)
    page = logged_in.get("/account/plan").get_data(as_text=True)
    assert "free: up to 1 active retainer, no charge" in page and "pro: up to 10 active retainers, $9/month" in page
    current = re.sub(r"<[^>]+>", "", re.search(r'<p id="current-plan">(.*?)</p>', page).group(1))
    assert current == "You are on the free plan (up to 1 active retainer, no charge). Active retainers: 1 of 1."
    assert page.count('id="csrf_token"') == 0
    r = post_form(logged_in, "/account/plan/pro", {}, page="/account/plan", follow_redirects=True)
    said = re.search(r'<p class="flash" role="status">(.*?)</p>', r.get_data(as_text=True)).group(1)
    assert said == ("Thank you: we have your request to move to the Pro plan (up to 10 active retainers, "
                    "$9 a month). It takes effect as soon as the operator confirms your payment.")
    assert 'id="pending-request"' in r.get_data(as_text=True)
    assert create_retainer(logged_in, name="Second", client="Client 2").status_code == 403  # not yet confirmed
    with app.app_context():
        db = get_db()
        with transaction(db):
            accounts.set_plan(db, "consultant@example.com", "pro")
    assert create_retainer(logged_in, name="Second", client="Client 2").status_code == 302
    page = logged_in.get("/account/plan").get_data(as_text=True)
    assert 'id="pending-request"' not in page and "Active retainers: 2 of 10" in page


@dataclass
class CheckoutBilling:
    """A provider with a hosted checkout page, plugged in through configuration only."""

    name: str = "checkout"

    def pending(self, session, account):
        return None

    def start_upgrade(self, session, account, plan):
        return UpgradeStep(request=None, message="", redirect_url=f"https://pay.example/checkout?plan={plan}")


def test_a_provider_with_a_checkout_page_plugs_in_without_view_changes(app, logged_in):
    app.config["BILLING"] = CheckoutBilling()
    r = post_form(logged_in, "/account/plan/pro", {}, page="/account/plan")
    assert r.status_code == 302 and r.headers["Location"] == "https://pay.example/checkout?plan=pro"
