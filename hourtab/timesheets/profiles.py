"""Saved column mappings ("import profiles") for CSVs that are not a known tracker's export."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from hourtab.core.accounts import Account
from hourtab.core.errors import Conflict, NotFound
from hourtab.core.scoping import select_owned
from hourtab.timesheets.dateorder import DATE_ORDERS
from hourtab.timesheets.errors import MappingInvalid
from hourtab.timesheets.models import ImportProfile
from hourtab.timesheets.spec import DURATION_UNITS, FIELDS


def list_profiles(session: Session, account: Account) -> list[ImportProfile]:
    return list(session.scalars(select_owned(ImportProfile, account.id).order_by(ImportProfile.name)))


def get_profile(session: Session, account: Account, name: str) -> ImportProfile:
    found = session.scalars(select_owned(ImportProfile, account.id).where(ImportProfile.name == name)).first()
    if found is None:
        raise NotFound(f"No import profile named {name!r}.")
    return found


def save_profile(session: Session, account: Account, name: str, mapping: dict[str, str],
                 duration_unit: str = "auto", date_order: str | None = None, replace: bool = True) -> ImportProfile:
    """Create or (with ``replace``) overwrite the named profile; the caller commits."""
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise MappingInvalid("Give the profile a name of 1 to 100 characters.")
    mapping = {k: v.strip() for k, v in mapping.items() if v and v.strip()}
    unknown = sorted(set(mapping) - set(FIELDS))
    if unknown:
        raise MappingInvalid(f"Unknown fields in the mapping: {', '.join(unknown)}.")
    if duration_unit not in DURATION_UNITS:
        raise MappingInvalid(f"Unknown duration unit {duration_unit!r}.")
    if date_order not in (None, "", *DATE_ORDERS):
        raise MappingInvalid(f"Unknown date order {date_order!r}; choose dmy or mdy.")
    existing = session.scalars(select(ImportProfile).where(ImportProfile.account_id == account.id,
                                                           ImportProfile.name == name)).first()
    if existing is not None and not replace:
        raise Conflict(f"An import profile named {name!r} already exists.")
    profile = existing or ImportProfile(account_id=account.id, name=name)
    profile.mapping = mapping
    profile.duration_unit = duration_unit
    profile.date_order = date_order or None
    session.add(profile)
    session.flush()
    return profile
