"""The languages a client's documents are written in, and their translations.

A retainer has a language; its public page, the JSON labels meant for people, the statement and
invoice PDFs, the feed and the alert e-mails are written in it, with dates, numbers and money in its
locale (Babel). The consultant's own pages stay in English. Translations are gettext catalogs shipped
inside the package (``hourtab/locale/<language>/LC_MESSAGES/messages.mo``), so the wheel carries them.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from gettext import NullTranslations
from pathlib import Path
from typing import Any

from babel.dates import format_date, format_interval, format_skeleton
from babel.lists import format_list
from babel.numbers import format_decimal
from babel.support import Translations

from hourtab.core.errors import InvalidInput

#: Code → the language's name in itself (what the consultant picks from; the client reads it).
LANGUAGES: dict[str, str] = {
    "en": "English", "de": "Deutsch", "fr": "Français", "es": "Español", "pt": "Português", "ja": "日本語",
}
DEFAULT_LANGUAGE = "en"
DOMAIN = "messages"
#: Languages whose medium date is all digits (``02.12.2025``, ``2025/12/02``); the others' short one is.
NUMERIC_MEDIUM = {"de", "ja"}


class UnknownLanguage(InvalidInput):
    """A language HourTab does not write documents in."""


def check_language(code: str | None) -> str:
    """``"DE"`` → ``"de"``; refuses a code outside :data:`LANGUAGES` with the list of those shipped."""
    text = (code or "").strip().lower().replace("_", "-")
    if text not in LANGUAGES:
        raise UnknownLanguage(f"Unknown language {code!r}; use one of {', '.join(LANGUAGES)}.")
    return text


def locale_dir() -> Path:
    """The catalogs shipped inside the package (the wheel carries them beside the code)."""
    return Path(__file__).resolve().parent.parent / "locale"


@cache
def translations_for(language: str) -> NullTranslations:
    """The compiled catalog of ``language`` (English: the messages as written, no catalog)."""
    code = check_language(language)
    if code == DEFAULT_LANGUAGE:
        return NullTranslations()
    return Translations.load(str(locale_dir()), [code], domain=DOMAIN)


@dataclass(frozen=True)
class Writer:
    """How one language writes the client's documents: its messages, and its dates and numbers.

    English keeps HourTab's own short style (``Tue 2 Dec 2025``) so English documents stay as they
    were; every other language writes dates as its locale does (``Di., 2. Dez. 2025``, ``2025年12月2日(火)``).
    """

    language: str = DEFAULT_LANGUAGE

    @property
    def translations(self) -> NullTranslations:
        return translations_for(self.language)

    def gettext(self, message: str) -> str:
        return self.translations.gettext(message)

    def ngettext(self, singular: str, plural: str, n: int) -> str:
        return self.translations.ngettext(singular, plural, n)

    def pgettext(self, context: str, message: str) -> str:
        """``message`` where the same English word means two things (an invoice's "From" party)."""
        return self.translations.pgettext(context, message)

    def day(self, day: dt.date) -> str:
        """A day heading: ``Tue 2 Dec 2025`` / ``Di., 2. Dez. 2025`` / ``2025年12月2日(火)``."""
        if self.language == DEFAULT_LANGUAGE:
            return format_date(day, "EEE d MMM y", locale="en")
        return format_skeleton("yMMMEd", day, locale=self.language)

    def short_day(self, day: dt.date) -> str:
        """A day of this year, as the headline writes it: ``1 Dec`` / ``1. Dez.`` / ``12月1日``."""
        if self.language == DEFAULT_LANGUAGE:
            return format_date(day, "d MMM", locale="en")
        return format_skeleton("MMMd", day, locale=self.language)

    def date(self, day: dt.date) -> str:
        """A date in running text: ``1 October 2026`` / ``1. Oktober 2026`` / ``2026年10月1日``."""
        if self.language == DEFAULT_LANGUAGE:
            return format_date(day, "d MMMM y", locale="en")
        return format_date(day, "long", locale=self.language)

    def moment(self, at: dt.datetime, tz: Any) -> str:
        """An instant in the retainer's zone: ``2. Dez. 2025, 14:05 (Europe/Berlin)``."""
        local = at.astimezone(tz)
        if self.language == DEFAULT_LANGUAGE:
            day = format_date(local.date(), "d MMM y", locale="en")
        else:
            day = format_skeleton("yMMMd", local.date(), locale=self.language)
        return f"{day}, {local:%H:%M} ({getattr(tz, 'key', tz)})"

    def numeric_date(self, day: dt.date) -> str:
        """A date in a table column: ``2025-12-02`` / ``02.12.2025`` / ``2025/12/02``."""
        if self.language == DEFAULT_LANGUAGE:
            return day.isoformat()
        return format_date(day, "medium" if self.language in NUMERIC_MEDIUM else "short", locale=self.language)

    def clock_time(self, at: dt.datetime, tz: Any) -> str:
        """A statement's stamp: ``2025-12-01 00:00 (Europe/Berlin)`` / ``01.12.2025 00:00 (Europe/Berlin)``."""
        local = at.astimezone(tz)
        return f"{self.numeric_date(local.date())} {local:%H:%M} ({getattr(tz, 'key', tz)})"

    def period(self, period: Any) -> str:
        """A period's label (``Nov 2025``, ``1 – 7 Sep 2025``; ``2025年11月``, ``Nov. 2025``);
        ``period`` is a ``retainers.periods.Period`` (start, end, last day, English label)."""
        if self.language == DEFAULT_LANGUAGE:
            return str(period.label)
        if period.start.day == 1 and period.end.day == 1 and 28 <= (period.end - period.start).days <= 31:
            return format_skeleton("yMMM", period.start, locale=self.language)
        return format_interval(period.start, period.last_day, "yMMMd", locale=self.language)

    def period_of_month(self, month: str) -> str:
        """A statement month, ``2025-11`` (English: as written) / ``Nov. 2025`` / ``2025年11月``."""
        if self.language == DEFAULT_LANGUAGE:
            return month
        year, number = (int(part) for part in month.split("-"))
        return format_skeleton("yMMM", dt.date(year, number, 1), locale=self.language)

    def number(self, value: Decimal | int | float) -> str:
        """``1234.5`` → ``1,234.5`` / ``1.234,5``."""
        return format_decimal(value, locale=self.language)

    def page_css(self) -> str:
        """The PDF footer in this language, as a stylesheet after the kernel's ("" in English, whose
        footer the kernel writes): ``@page { @bottom-right { content: "Seite " counter(page) … } }``."""
        if self.language == DEFAULT_LANGUAGE:
            return ""
        text = self.gettext("Page %(page)s of %(pages)s")
        parts = re.split(r"(%\((?:page|pages)\)s)", text)
        css = {"%(page)s": "counter(page)", "%(pages)s": "counter(pages)"}
        content = " ".join(css.get(p) or '"' + p.replace("\\", "").replace('"', "'") + '"' for p in parts if p)
        return f"\n@page {{ @bottom-right {{ content: {content}; }} }}"

    def template_context(self) -> dict[str, Any]:
        """What a template of the client's documents renders with: the ``{% trans %}`` functions
        (``gettext``, ``ngettext``, ``_``), the ``<html lang>`` and this writer as ``lang``."""
        return {"gettext": self.gettext, "ngettext": self.ngettext, "pgettext": self.pgettext, "_": self.gettext,
                "html_lang": self.language, "lang": self}


def N_(message: str) -> str:  # noqa: N802 - the name gettext's tools look for
    """Marks a message kept in a table for extraction; it is translated where it is written."""
    return message


def list_of(items: list[str], w: Writer) -> str:
    """``a, b and c`` in English (HourTab's style), as the locale joins a list otherwise."""
    if len(items) < 2:
        return "".join(items)
    if w.language == DEFAULT_LANGUAGE:
        return ", ".join(items[:-1]) + " and " + items[-1]
    return format_list(items, locale=w.language)


def writer(language: str | None) -> Writer:
    """The writer of ``language`` (``None``: English)."""
    return Writer(check_language(language or DEFAULT_LANGUAGE))
