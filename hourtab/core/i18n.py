"""The languages a client's documents are written in, and their translations.

A retainer has a language; its public page, the JSON labels meant for people, the statement and
invoice PDFs, the feed and the alert e-mails are written in it, with dates, numbers and money in its
locale (Babel). The consultant's own pages stay in English. Translations are gettext catalogs shipped
inside the package (``hourtab/locale/<language>/LC_MESSAGES/messages.mo``), so the wheel carries them.
"""

from __future__ import annotations

from hourtab.core.errors import InvalidInput

#: Code → the language's name in itself (what the consultant picks from; the client reads it).
LANGUAGES: dict[str, str] = {
    "en": "English", "de": "Deutsch", "fr": "Français", "es": "Español", "pt": "Português", "ja": "日本語",
}
DEFAULT_LANGUAGE = "en"


class UnknownLanguage(InvalidInput):
    """A language HourTab does not write documents in."""


def check_language(code: str | None) -> str:
    """``"DE"`` → ``"de"``; refuses a code outside :data:`LANGUAGES` with the list of those shipped."""
    text = (code or "").strip().lower().replace("_", "-")
    if text not in LANGUAGES:
        raise UnknownLanguage(f"Unknown language {code!r}; use one of {', '.join(LANGUAGES)}.")
    return text
