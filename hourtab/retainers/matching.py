"""Which time entries count against a retainer: match rules on client, project, tags, billable.

Rules compare case-insensitively after trimming, because the same client is typed "ACME" in one
tracker and "Acme " in another. Within one field any listed value matches (OR); across fields
every given rule must hold (AND); an empty field does not constrain.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from hourtab.retainers.terms import InvalidTerms


def norm(value: object) -> str:
    """A name as rules compare it: trimmed, inner whitespace collapsed, case folded."""
    return " ".join(str(value or "").split()).casefold()


_norm = norm


def _clean(values: Any) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    return tuple(dict.fromkeys(v.strip() for v in values if v and v.strip()))


@dataclass(frozen=True)
class MatchRules:
    clients: tuple[str, ...] = ()
    projects: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    billable: bool | None = None

    def __post_init__(self) -> None:
        for name in ("clients", "projects", "tags"):
            object.__setattr__(self, name, _clean(getattr(self, name)))
        if not (self.clients or self.projects or self.tags):
            raise InvalidTerms("Give at least one match rule (a client, project or tag), so the "
                               "retainer does not swallow every entry of the account.")

    def to_json(self) -> dict[str, Any]:
        return {"clients": list(self.clients), "projects": list(self.projects), "tags": list(self.tags),
                "billable": self.billable}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MatchRules:
        return cls(clients=tuple(data.get("clients") or ()), projects=tuple(data.get("projects") or ()),
                   tags=tuple(data.get("tags") or ()), billable=data.get("billable"))

    def describe(self) -> str:
        """Each name quoted whole: "Panageas, Kathy" is one client, never two."""
        parts = []
        for what, names in (("client", self.clients), ("project", self.projects), ("tag", self.tags)):
            if names:
                parts.append(what + " " + " or ".join(f"“{n}”" for n in names))
        if self.billable is not None:
            parts.append("billable" if self.billable else "non-billable")
        return " and ".join(parts)

    def matches(self, client: str, project: str, tags: str, billable: bool | None) -> bool:
        """Does one entry match? ``tags`` is the ", "-joined list the importer stores."""
        if self.clients and _norm(client) not in {_norm(c) for c in self.clients}:
            return False
        if self.projects and _norm(project) not in {_norm(p) for p in self.projects}:
            return False
        if self.tags:
            have = {_norm(t) for t in str(tags or "").split(",")}
            if not have & {_norm(t) for t in self.tags}:
                return False
        return self.billable is None or bool(billable) == self.billable

    def mask(self, frame: pd.DataFrame) -> pd.Series:
        """The same test over a frame with columns client, project, tags, billable.

        Each text is normalised once per distinct value (an export has a few dozen clients and
        projects, and tens of thousands of rows), then looked up per row by its code.
        """
        ok = np.ones(len(frame), dtype=bool)
        if self.clients:
            ok &= _per_value(frame["client"], lambda v: _norm(v) in {_norm(c) for c in self.clients})
        if self.projects:
            ok &= _per_value(frame["project"], lambda v: _norm(v) in {_norm(p) for p in self.projects})
        if self.tags:
            wanted = {_norm(t) for t in self.tags}
            ok &= _per_value(frame["tags"], lambda v: bool({_norm(t) for t in str(v or "").split(",")} & wanted))
        if self.billable is not None:
            ok &= (frame["billable"].astype("boolean").fillna(False).astype(bool) == self.billable).to_numpy()
        return pd.Series(ok, index=frame.index)


def _per_value(values: pd.Series, test: Callable[[str], bool]) -> np.ndarray:
    """``test`` of each row's value, computed once per distinct value."""
    codes, uniques = pd.factorize(values.fillna("").astype("str"))
    answers = np.fromiter((bool(test(u)) for u in uniques), dtype=bool, count=len(uniques))
    return answers[codes] if len(codes) else np.zeros(0, dtype=bool)
