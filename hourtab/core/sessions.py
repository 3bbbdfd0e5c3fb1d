"""Server-side log-in sessions, so that logging out really ends a session.

The browser's cookie is signed but self-contained: a copy taken before log-out would otherwise
stay valid for as long as the secret key does. Each log-in therefore gets a random token kept in
the cookie and a row here (only the token's SHA-256 is stored, so a database dump holds nothing
that can be replayed). Log-out, a password change and "log out everywhere" revoke rows; a row
also dies after an absolute lifetime and after an idle time, both checked on every request.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from dataclasses import dataclass
from typing import cast

from sqlalchemy import CursorResult, ForeignKey, Integer, String, delete, update
from sqlalchemy.orm import Mapped, Session, mapped_column

from hourtab.core.db import Base, UTCDateTime, utcnow

#: How often ``last_seen_at`` is written: often enough for an idle limit measured in hours,
#: rarely enough that a busy session does not write on every request.
TOUCH_EVERY = dt.timedelta(minutes=1)


@dataclass(frozen=True)
class Lifetimes:
    """The longest a session lives at all, and the longest it lives without a request."""

    absolute: dt.timedelta = dt.timedelta(days=14)
    idle: dt.timedelta = dt.timedelta(days=2)


class LoginSession(Base):
    __tablename__ = "login_sessions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # sha256 hex of the cookie's token
    account_id: Mapped[int] = mapped_column(Integer, ForeignKey("accounts.id", ondelete="CASCADE"),
                                            nullable=False, index=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False)
    last_seen_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def open_session(session: Session, account_id: int, now: dt.datetime | None = None) -> str:
    """Open a session for the account and return the token to put in the cookie; the caller commits."""
    now = now or utcnow()
    token = secrets.token_urlsafe(32)
    session.add(LoginSession(id=_digest(token), account_id=account_id, created_at=now, last_seen_at=now))
    session.flush()
    return token


def prune(session: Session, account_id: int, lifetimes: Lifetimes, now: dt.datetime | None = None) -> None:
    """Forget the account's sessions that can never be used again (revoked, or past a lifetime)."""
    now = now or utcnow()
    session.execute(delete(LoginSession).where(
        LoginSession.account_id == account_id,
        (LoginSession.revoked_at.is_not(None)) | (LoginSession.created_at < now - lifetimes.absolute)
        | (LoginSession.last_seen_at < now - lifetimes.idle)))


def resolve(session: Session, token: str, lifetimes: Lifetimes,
            now: dt.datetime | None = None) -> LoginSession | None:
    """The live session behind a cookie's token, or ``None`` when revoked, expired or unknown."""
    if not token or len(token) > 100:
        return None
    row = session.get(LoginSession, _digest(token))
    now = now or utcnow()
    if row is None or row.revoked_at is not None:
        return None
    if now - row.created_at > lifetimes.absolute or now - row.last_seen_at > lifetimes.idle:
        return None
    return row


def needs_touch(row: LoginSession, now: dt.datetime | None = None) -> bool:
    return (now or utcnow()) - row.last_seen_at >= TOUCH_EVERY


def touch(session: Session, row: LoginSession, now: dt.datetime | None = None) -> None:
    row.last_seen_at = now or utcnow()


def revoke(session: Session, token: str, now: dt.datetime | None = None) -> None:
    session.execute(update(LoginSession).where(LoginSession.id == _digest(token),
                                               LoginSession.revoked_at.is_(None))
                    .values(revoked_at=now or utcnow()))


def revoke_all(session: Session, account_id: int, now: dt.datetime | None = None) -> int:
    """Revoke every live session of the account (password change, "log out everywhere")."""
    # An UPDATE's result is a cursor result (it has the row count); execute() is typed for any statement.
    statement = (update(LoginSession).where(LoginSession.account_id == account_id, LoginSession.revoked_at.is_(None))
                 .values(revoked_at=now or utcnow()))
    result = cast(CursorResult, session.execute(statement))
    return result.rowcount or 0
