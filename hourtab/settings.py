"""Account settings: what clients see of the consultant, and the defaults of new retainers.

Outside the kernel because a change re-renders every retainer's public page (the hours domain).
"""

from __future__ import annotations

import enum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import update
from sqlalchemy.orm import Session

from hourtab.core.accounts import Account, normalize_email
from hourtab.core.db import utcnow
from hourtab.core.errors import InvalidInput
from hourtab.core.values import single_line
from hourtab.retainers.models import Retainer
from hourtab.retainers.terms import ROUNDING_INCREMENTS_MIN


class HoursUnit(enum.StrEnum):
    """How the consultant wants hours written on pages and statements (``Account.hours_unit``)."""

    DECIMAL = "decimal"  # 0.67 h
    CLOCK = "hm"  # 0:40 h


def _clean(value: str | None, what: str, limit: int) -> str:
    """One line without control characters, as sign-up keeps a name (feed, PDFs and e-mail headers)."""
    value = single_line(value)
    if len(value) > limit:
        raise InvalidInput(f"The {what} is too long ({limit} characters at most).")
    return value


def update_settings(session: Session, account: Account, *, display_name: str, contact: str, timezone: str,
                    rounding_min: int | str, hours_unit: str) -> Account:
    """Change what clients see of the consultant and the defaults of new retainers."""
    name = _clean(display_name, "display name", 200)
    contact = _clean(contact, "contact e-mail", 320)
    if contact:
        contact = normalize_email(contact)
    timezone = (timezone or "").strip() or "UTC"
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise InvalidInput(f"Unknown time zone {timezone!r}; use an IANA name such as Europe/Berlin.") from e
    try:
        rounding = int(str(rounding_min).strip() or 0)
    except ValueError as e:
        raise InvalidInput(f"Default rounding must be a number of minutes, not {rounding_min!r}.") from e
    if rounding not in ROUNDING_INCREMENTS_MIN:
        allowed = ", ".join(map(str, ROUNDING_INCREMENTS_MIN))
        raise InvalidInput(f"Default rounding must be one of {allowed} minutes (0 = none).")
    try:
        unit = HoursUnit(hours_unit).value
    except ValueError as e:
        raise InvalidInput(f"Unknown hours unit {hours_unit!r}; choose decimal or hm.") from e
    account.display_name, account.contact, account.timezone = name, contact, timezone
    account.rounding_min, account.hours_unit = rounding, unit
    _touch_retainers(session, account.id)
    session.flush()
    return account


def _touch_retainers(session: Session, account_id: int) -> None:
    """Clients' pages show the consultant's name and units: every retainer's page must re-render."""
    session.execute(update(Retainer).where(Retainer.account_id == account_id)
                    .values(revision=Retainer.revision + 1, updated_at=utcnow()))
