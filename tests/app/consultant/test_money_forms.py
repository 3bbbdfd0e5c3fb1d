"""The consultant's terms form sells a retainer in money; the credit form records what a top-up was bought for."""

from __future__ import annotations

import json
import re
from decimal import ROUND_HALF_UP, Decimal

from tests.helpers.consultant_forms import RETAINER_FORM as FORM
from tests.helpers.consultant_forms import import_sample
from tests.helpers.forms import post_form


def test_terms_form_and_top_up_price_reach_the_clients_json_and_page(app, logged_in):
    import_sample(app)
    r = post_form(logged_in, "/retainers/new", {**FORM, "fee": "9.5", "currency": "JPY", "hourly_rate": ""})
    assert r.status_code == 400 and "whole number" in r.get_data(as_text=True)
    r = post_form(logged_in, "/retainers/new", {**FORM, "fee": "12000", "currency": "usd", "hourly_rate": "80"})
    assert r.status_code == 302, r.get_data(as_text=True)
    location = r.headers["Location"]
    rid = int(location.rsplit("/", 1)[1])
    edit = logged_in.get(f"/retainers/{rid}/edit").get_data(as_text=True)
    assert 'value="12000.00"' in edit and 'value="USD"' in edit and 'value="80.00"' in edit
    r = post_form(logged_in, f"/retainers/{rid}/credits", {"kind": "topup", "on": "2017-08-10", "hours": "10",
                                                           "reason": "Launch week", "amount": "850", "currency": ""},
                  page=location)
    assert r.status_code == 302, r.get_data(as_text=True)
    page = logged_in.get(location).get_data(as_text=True)
    assert "$850.00" in page
    url = re.search(r'readonly value="http://localhost(/h/[^"]+)"', page).group(1)
    doc = json.loads(logged_in.get(f"{url}.json").data)
    assert doc["retainer"]["terms"]["money"] == {"currency": "USD", "fee": "12000.00", "hourly_rate": "80.00",
                                                 "overage_rate": None}
    assert [(c["amount"], c["currency"]) for c in doc["credits"]] == [("850.00", "USD")]
    august = doc["periods"][0]
    used = (Decimal(august["used_seconds"]) * 80 / 3600).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    assert august["used_seconds"] > 0 and august["money"]["used_amount"] == str(used)
    assert august["money"]["topups_amount"] == "850.00" and august["money"]["due_amount"] == "12850.00"
    assert "$850.00" in logged_in.get(url).get_data(as_text=True)
