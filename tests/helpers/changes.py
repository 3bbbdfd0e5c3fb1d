"""Posting a change that revises closed periods: its preview first, then the confirmation it offers."""

from __future__ import annotations

import html
import re

from tests.helpers.forms import post_form


def preview_form(page: str) -> tuple[str, list[tuple[str, str]]]:
    """The confirm form of a change's preview page: its action and every field it posts back."""
    form = re.search(r'<section class="card" id="change-preview">.*?<form method="post" action="([^"]+)">(.*?)</form>',
                     page, re.S)
    assert form, "no change preview on the page"
    fields = re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form.group(2))
    return html.unescape(form.group(1)), [(html.unescape(k), html.unescape(v)) for k, v in fields]


def confirm_preview(client, response):
    """Post the confirmation a preview page (``response``) asks for; the answer."""
    action, fields = preview_form(response.get_data(as_text=True))
    data: dict[str, list[str]] = {}
    for k, v in fields:
        data.setdefault(k, []).append(v)
    return client.post(action, data=data)


def post_previewed(client, url: str, data: dict, page: str | None = None):
    """Post a change, expect its preview (nothing saved), confirm it; the first answer and the last."""
    first = post_form(client, url, data, page=page)
    assert first.status_code == 200 and 'id="change-preview"' in first.get_data(as_text=True), first.status_code
    return first, confirm_preview(client, first)
