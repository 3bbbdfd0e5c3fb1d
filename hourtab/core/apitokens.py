"""Personal access tokens: how a consultant's own scripts call the API as their account.

A token is shown once, when it is made, and only its SHA-256 is stored (as log-in sessions are,
``sessions``): it is 256 random bits, so a fast hash is enough and a database dump holds nothing
that can be replayed. It starts with ``PREFIX`` so that a leaked one is recognisable (by a secret
scanner, or by the consultant in a log), and the list shows its first characters to tell tokens
apart. A revoked token stays listed, with when it was revoked, and never works again.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from typing import Any

from sqlalchemy import Integer, String, func, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from hourtab.core.db import Base, UTCDateTime, utcnow
from hourtab.core.errors import Conflict, InvalidInput, NotFound
from hourtab.core.scoping import AccountOwned, get_owned, select_owned
from hourtab.core.values import single_line

PREFIX = "htpat_"
#: 32 random bytes from ``secrets``: 43 URL-safe characters after the prefix.
TOKEN_BYTES = 32
#: Characters of a token kept in the clear to tell tokens apart (the prefix and four more).
HINT_LENGTH = len(PREFIX) + 4
MAX_NAME = 100
#: Live tokens an account may hold at once; revoking one makes room.
MAX_LIVE = 25
#: How often ``last_used_at`` is written: enough to see which tokens are in use, not a write per call.
TOUCH_EVERY = dt.timedelta(minutes=1)


class ApiToken(AccountOwned, Base):
    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(MAX_NAME), nullable=False)
    #: sha256 hex of the whole token, prefix included.
    digest: Mapped[str] = mapped_column(String(64), nullable=False, unique=True)
    hint: Mapped[str] = mapped_column(String(16), nullable=False)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    last_used_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)

    @property
    def live(self) -> bool:
        return self.revoked_at is None

    def as_dict(self) -> dict[str, Any]:
        """What a list shows of a token: never the token itself (it is not kept)."""
        def iso(at: dt.datetime | None) -> str | None:
            return at.isoformat() if at is not None else None

        return {"id": self.id, "name": self.name, "hint": self.hint + "…", "created_at": iso(self.created_at),
                "last_used_at": iso(self.last_used_at), "revoked_at": iso(self.revoked_at)}


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _clean_name(name: str) -> str:
    cleaned = single_line(name or "").strip()
    if not cleaned:
        raise InvalidInput("Give the token a name that says where it is used, e.g. “invoicing script”.")
    if len(cleaned) > MAX_NAME:
        raise InvalidInput(f"A token's name must be at most {MAX_NAME} characters.")
    return cleaned


def create(session: Session, account_id: int, name: str, now: dt.datetime | None = None) -> tuple[ApiToken, str]:
    """A new token for the account: the row and the token itself, which is never stored; the caller commits."""
    name = _clean_name(name)
    live = session.scalar(select(func.count(ApiToken.id)).where(ApiToken.account_id == account_id,
                                                                ApiToken.revoked_at.is_(None))) or 0
    if live >= MAX_LIVE:
        raise Conflict(f"This account already has {MAX_LIVE} live API tokens; revoke one first.")
    token = PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
    row = ApiToken(account_id=account_id, name=name, digest=_digest(token), hint=token[:HINT_LENGTH],
                   created_at=now or utcnow())
    session.add(row)
    session.flush()
    return row, token


def list_tokens(session: Session, account_id: int) -> list[ApiToken]:
    """The account's tokens, live ones first, newest first."""
    return list(session.scalars(select_owned(ApiToken, account_id)
                                .order_by(ApiToken.revoked_at.is_not(None), ApiToken.id.desc())))


def revoke(session: Session, account_id: int, token_id: int, now: dt.datetime | None = None) -> ApiToken:
    """Revoke one of the account's tokens (another account's id is ``NotFound``); revoking twice keeps
    the first time."""
    if not 0 < token_id < 2**31:
        raise NotFound(f"No API token {token_id}.")
    row = get_owned(session, ApiToken, account_id, token_id, missing=NotFound(f"No API token {token_id}."))
    if row.revoked_at is None:
        row.revoked_at = now or utcnow()
    return row


def resolve(session: Session, token: str) -> ApiToken | None:
    """The live token behind a presented one, or ``None`` (unknown, malformed or revoked alike)."""
    if not token.startswith(PREFIX) or len(token) > 100:
        return None
    row = session.scalars(select(ApiToken).where(ApiToken.digest == _digest(token))).first()
    if row is None or row.revoked_at is not None:
        return None
    return row


def needs_touch(row: ApiToken, now: dt.datetime | None = None) -> bool:
    return row.last_used_at is None or (now or utcnow()) - row.last_used_at >= TOUCH_EVERY


def touch(row: ApiToken, now: dt.datetime | None = None) -> None:
    row.last_used_at = now or utcnow()
