"""The postmortem's human parts as stored edits: severity, status, milestones, GPU-hour price, action items.

Services take the session first and never commit (callers wrap them in ``transaction``); every edit
bumps the incident's revision, so a cached PDF is never served stale. A milestone left empty is found
in the evidence when the report is built.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from sqlalchemy.orm import Session

from hourtab.core.values import check_date, xml_safe
from incidents.writeups.errors import InvalidIncident
from incidents.writeups.models import (
    ACTION_KINDS,
    INCIDENT_STATUSES,
    MILESTONES,
    SEVERITIES,
    ActionItem,
    Incident,
)

#: Numeric(10, 2): the largest price the column holds.
MAX_PRICE = Decimal("99999999.99")


@dataclass(frozen=True)
class PostmortemEdits:
    severity: str = ""
    incident_status: str = ""
    #: Milestone name → the time set by hand, or ``None`` to find it in the evidence again.
    milestones: dict[str, dt.datetime | None] | None = None
    #: As typed ("2.50", "1,200"); empty for no price.
    gpu_hour_price: str = ""
    currency: str = "USD"


def parse_price(text: str) -> Decimal | None:
    """A price per GPU-hour as typed: "2.5", "1,200.00"; empty is no price. Refused: negative, not a
    number, more than two decimals or more than the column holds."""
    text = (text or "").strip().replace(",", "")
    if not text:
        return None
    try:
        price = Decimal(text)
    except InvalidOperation as e:
        raise InvalidIncident(f"The price per GPU-hour must be a number such as 2.50, not {text[:20]!r}.") from e
    if not price.is_finite() or price < 0 or price > MAX_PRICE or price != price.quantize(Decimal("0.01")):
        raise InvalidIncident(f"The price per GPU-hour must be between 0 and {MAX_PRICE:,} with at most two "
                              f"decimals, not {text[:20]!r}.")
    return price.quantize(Decimal("0.01"))


def update_postmortem(session: Session, incident: Incident, edits: PostmortemEdits) -> Incident:
    if edits.severity not in ("", *SEVERITIES):
        raise InvalidIncident(f"Severity must be one of {', '.join(SEVERITIES)} (or none), not {edits.severity!r}.")
    if edits.incident_status not in ("", *INCIDENT_STATUSES):
        raise InvalidIncident(f"Status must be one of {', '.join(INCIDENT_STATUSES)} (or found from the "
                              f"milestones), not {edits.incident_status!r}.")
    currency = (edits.currency or "USD").strip().upper()
    if not re.fullmatch(r"[A-Z]{3}", currency):
        raise InvalidIncident(f"The currency must be a three-letter code such as USD or EUR, not {currency[:10]!r}.")
    price = parse_price(edits.gpu_hour_price)
    milestones = edits.milestones or {}
    unknown = set(milestones) - set(MILESTONES)
    if unknown:
        raise InvalidIncident(f"Unknown milestones {sorted(unknown)}; allowed: {', '.join(MILESTONES)}.")
    for name, at in milestones.items():
        check_date(at, f"the {name} time")
    incident.severity, incident.incident_status = edits.severity, edits.incident_status
    incident.gpu_hour_price, incident.price_currency = price, currency
    for name, at in milestones.items():
        setattr(incident, f"{name}_at", at)
    incident.touch()
    session.flush()
    return incident


def _action(incident: Incident, action_id: int) -> ActionItem:
    item = next((a for a in incident.actions if a.id == action_id), None)
    if item is None:
        raise InvalidIncident(f"Action item {action_id} is not one of this incident's.")
    return item


def update_action(session: Session, incident: Incident, action_id: int, text: str, owner: str = "",
                  due: dt.date | None = None, kind: str = "prevent") -> ActionItem:
    item = _action(incident, action_id)
    if kind not in ACTION_KINDS:
        raise InvalidIncident(f"Kind must be one of {', '.join(ACTION_KINDS)}, not {kind!r}.")
    check_date(due, "the due date ('due')")
    text = xml_safe(text).strip()
    if not text:
        raise InvalidIncident("An action item needs a description.")
    item.text, item.owner, item.due, item.kind = text[:500], xml_safe(owner).strip()[:200], due, kind
    incident.touch()
    session.flush()
    return item


def remove_action(session: Session, incident: Incident, action_id: int) -> None:
    incident.actions.remove(_action(incident, action_id))
    incident.touch()
    session.flush()
