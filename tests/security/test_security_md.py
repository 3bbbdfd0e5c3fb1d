"""SECURITY.md states figures the code actually uses."""

from __future__ import annotations

import re
from pathlib import Path

from app.config import SETTINGS
from app.public.hours import DEFAULT_MISS_LIMIT, PUBLIC_CSP
from app.public.statement_guard import DEFAULT_RENDER_LIMIT
from hourtab.core.values import MAX_JSON_DEPTH
from hourtab.retainers.service import TOKEN_BYTES

TEXT = (Path(__file__).resolve().parents[2] / "SECURITY.md").read_text()


def test_figures_match_the_code():
    assert f"{TOKEN_BYTES} random bytes" in TEXT and f"({TOKEN_BYTES * 8} bits)" in TEXT
    assert f"({DEFAULT_MISS_LIMIT} a minute)" in TEXT
    assert f"`PUBLIC_RENDER_LIMIT`, {DEFAULT_RENDER_LIMIT} a minute" in TEXT
    assert f"deeper than {MAX_JSON_DEPTH} levels" in TEXT
    assert PUBLIC_CSP.startswith("default-src 'none'") and "`default-src 'none'`" in TEXT


def test_every_setting_it_names_exists_with_that_default():
    defaults = {s.env: s.default for s in SETTINGS}
    for name, default in re.findall(r"`(HOURTAB_[A-Z_]+)` \((\d+)", TEXT):
        assert defaults[name] == default, name
    for name in re.findall(r"`(HOURTAB_[A-Z_]+)`", TEXT):
        assert name in defaults, name


def test_it_says_how_to_report():
    assert "## Reporting a vulnerability" in TEXT
