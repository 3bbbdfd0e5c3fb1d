"""The client's languages are complete: every message the code and templates write for clients is
translated in every language shipped, keeps its placeholders, and the compiled catalogs and the
template of messages are current with their sources."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po

from hourtab.core.i18n import DEFAULT_LANGUAGE, LANGUAGES, locale_dir, translations_for

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = [code for code in LANGUAGES if code != DEFAULT_LANGUAGE]
#: ``%(name)s`` and a literal ``%%``: what a translation must keep for ``%`` formatting to work.
PLACEHOLDER = re.compile(r"%\([a-z_]+\)s|%%")


def _catalog(path: Path) -> Catalog:
    with path.open("rb") as f:
        return read_po(f)


def _ids(catalog: Catalog) -> set:
    return {(m.context, m.id) for m in catalog if m.id}


def _placeholders(text: str) -> list[str]:
    return sorted(PLACEHOLDER.findall(text))


def _extract(out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "babel.messages.frontend", "extract", "-F", "babel.cfg", "-k", "N_",
                    "--no-location", "--sort-output", "-o", str(out), "."], cwd=ROOT, check=True,
                   capture_output=True)
    return out


def test_the_template_of_messages_is_current_with_the_code_and_templates(tmp_path):
    fresh = _ids(_catalog(_extract(tmp_path / "fresh.pot")))
    kept = _ids(_catalog(locale_dir() / "messages.pot"))
    assert fresh - kept == set(), "new messages: run pybabel extract (docs/translations.md)"
    assert kept - fresh == set(), "messages no longer used: run pybabel extract (docs/translations.md)"


@pytest.mark.parametrize("language", SHIPPED)
def test_every_message_is_translated_with_its_placeholders(language):
    template = _catalog(locale_dir() / "messages.pot")
    po = _catalog(locale_dir() / language / "LC_MESSAGES" / "messages.po")
    problems = []
    for m in template:
        if not m.id:
            continue
        found = po.get(m.id, context=m.context)
        strings = found.string if found is not None and isinstance(found.string, tuple) else (
            (found.string,) if found is not None else ())
        ids = m.id if isinstance(m.id, tuple) else (m.id,)
        if found is None or found.fuzzy or not strings or not all(strings):
            problems.append(f"untranslated: {m.id!r}")
            continue
        for text in strings:
            if _placeholders(text) != _placeholders(ids[-1]):
                problems.append(f"placeholders differ: {m.id!r} → {text!r}")
    assert problems == []


@pytest.mark.parametrize("language", SHIPPED)
def test_the_compiled_catalog_is_the_translated_one(language):
    """The ``.mo`` the app loads says what the ``.po`` says (it was compiled after the last edit)."""
    po = _catalog(locale_dir() / language / "LC_MESSAGES" / "messages.po")
    loaded = translations_for(language)
    stale = []
    for m in po:
        if not m.id or isinstance(m.id, tuple):
            continue
        got = loaded.pgettext(m.context, m.id) if m.context else loaded.gettext(m.id)
        if got != m.string:
            stale.append(m.id)
    assert stale == [], "run pybabel compile -d hourtab/locale (docs/translations.md)"
