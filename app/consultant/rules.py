"""A retainer's rules on its form: one input per exact name, never a text split on a separator.

``NamesField`` reads every value posted under its name (``match_client`` repeated), so "Panageas,
Kathy" and "Acme, Inc." stay one client each. The form shows one row per name and an empty one to
add another (a script adds and removes rows; without it, the empty row is there), with the names
the account's entries carry as suggestions.
"""

from __future__ import annotations

from typing import Any

from wtforms import Field
from wtforms.validators import ValidationError

from hourtab.core.values import xml_safe
from hourtab.retainers.matching import MatchRules

#: Names per rule field at most, and characters per name (the entries' own column width).
MAX_NAMES, MAX_LENGTH = 100, 200


class NamesField(Field):
    """A list of exact names, one form value each; empty values are dropped, order and case kept."""

    data: list[str]

    def process_data(self, value: Any) -> None:
        self.data = list(value or [])

    def process_formdata(self, valuelist: list[str]) -> None:
        names = (" ".join(xml_safe(v).split()) for v in valuelist)
        self.data = list(dict.fromkeys(n for n in names if n))

    def pre_validate(self, form: Any) -> None:
        if len(self.data) > MAX_NAMES:
            raise ValidationError(f"At most {MAX_NAMES} names.")
        long = [n for n in self.data if len(n) > MAX_LENGTH]
        if long:
            raise ValidationError(f"A name is at most {MAX_LENGTH} characters: “{long[0][:40]}…”.")


def rules_from(clients: list[str], projects: list[str], tags: list[str], billable: str | None,
               client: str) -> MatchRules:
    """The rules a form posted; when it names no client, project or tag: this retainer's own client."""
    named = bool(clients or projects or tags)
    return MatchRules(clients=tuple(clients) if named else (client.strip(),), projects=tuple(projects), tags=tuple(tags),
                      billable={"yes": True, "no": False}.get(billable or ""))


def fill(form: Any, rules: MatchRules) -> None:
    form.match_client.data = list(rules.clients)
    form.match_project.data = list(rules.projects)
    form.match_tag.data = list(rules.tags)
    choice: dict[bool | None, str] = {True: "yes", False: "no", None: ""}
    form.match_billable.data = choice[rules.billable]
