"""One document renderer: a single Jinja environment renders statements, incident reports and e-mails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from jinja2 import UndefinedError

from hourtab.core import documents

ROOT = Path(__file__).resolve().parents[3]


def test_exactly_one_jinja_environment_in_the_code():
    made = []
    for pkg in ("app", "hourtab", "incidents"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if re.search(r"\b(jinja2\.)?(Sandboxed)?Environment\(", line):
                    made.append(f"{path.relative_to(ROOT)}:{number}")
    assert len(made) == 1 and made[0].startswith("hourtab/core/documents.py:"), made


def test_html_is_escaped_and_text_is_not():
    env = documents.template_environment()
    html = env.from_string("{{ x }}")  # a string template escapes, as an .html file does
    assert html.render(x="<b>") == "&lt;b&gt;"
    assert documents.render("email/confirm.txt", info=_Info(), alerts_when="when <80 %>", confirm_url="u",
                            unsubscribe_url="v").count("<80 %>") == 1
    assert "&lt;80 %&gt;" in documents.render("email/confirm.html", info=_Info(), alerts_when="when <80 %>",
                                              confirm_url="u", unsubscribe_url="v", subject="s")


def test_a_missing_name_is_an_error_not_a_blank():
    with pytest.raises(UndefinedError):
        documents.render("email/confirm.txt", info=_Info(), confirm_url="u", unsubscribe_url="v")


class _Info:
    name = "Retainer <A>"
    client = "Client"
    consultant_name = "Ada"
    consultant_contact = "ada@example.com"
