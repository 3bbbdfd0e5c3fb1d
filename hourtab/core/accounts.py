"""Consultant accounts: sign-up, authentication, password changes and plans.

Passwords are hashed with Argon2id (argon2-cffi): memory-hard, the current OWASP first choice,
and its hashes carry their own parameters so we can raise the cost later and rehash on login.
"""

from __future__ import annotations

import datetime as dt
import enum

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from email_validator import EmailNotValidError, validate_email
from sqlalchemy import Integer, String, func, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from hourtab.core.db import Base, UTCDateTime, utcnow
from hourtab.core.errors import Conflict, InvalidInput, NotFound

MIN_PASSWORD_LENGTH = 10
_hasher = PasswordHasher()


class Plan(enum.StrEnum):
    FREE = "free"
    PRO = "pro"


#: How many active retainers each plan keeps (no payment processing: ``hourtab user set-plan``).
RETAINER_LIMITS = {Plan.FREE: 1, Plan.PRO: 10}


class Account(Base):
    __tablename__ = "accounts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    email: Mapped[str] = mapped_column(String(320), unique=True, nullable=False)
    password_hash: Mapped[str] = mapped_column(String(255), nullable=False)
    plan: Mapped[str] = mapped_column(String(16), nullable=False, default=Plan.FREE.value)
    display_name: Mapped[str] = mapped_column(String(200), nullable=False, default="")
    contact: Mapped[str] = mapped_column(String(320), nullable=False, default="")
    timezone: Mapped[str] = mapped_column(String(64), nullable=False, default="UTC")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    password_changed_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)

    @property
    def retainer_limit(self) -> int:
        return RETAINER_LIMITS[Plan(self.plan)]

    @property
    def name_or_email(self) -> str:
        return self.display_name or self.email


def normalize_email(email: str) -> str:
    """Validate syntax only (no DNS lookups: the machine may be offline) and lower-case it."""
    try:
        result = validate_email((email or "").strip(), check_deliverability=False)
    except EmailNotValidError as e:
        raise InvalidInput(f"That e-mail address is not valid: {e}") from e
    return result.normalized.lower()


def check_password_strength(password: str) -> None:
    if len(password or "") < MIN_PASSWORD_LENGTH:
        raise InvalidInput(f"Choose a password of at least {MIN_PASSWORD_LENGTH} characters.")
    if len(password) > 1024:
        raise InvalidInput("That password is too long (1024 characters at most).")


def find_account(session: Session, email: str) -> Account | None:
    try:
        email = normalize_email(email)
    except InvalidInput:
        return None
    return session.scalars(select(Account).where(func.lower(Account.email) == email)).first()


def get_account(session: Session, email: str) -> Account:
    account = find_account(session, email)
    if account is None:
        raise NotFound(f"No account with e-mail {email}")
    return account


def create_account(session: Session, email: str, password: str, plan: str = Plan.FREE.value,
                   display_name: str = "") -> Account:
    """Create an account; the caller commits. Refuses duplicates before the unique index does."""
    email = normalize_email(email)
    check_password_strength(password)
    try:
        plan = Plan(plan).value
    except ValueError as e:
        raise InvalidInput(f"Unknown plan {plan!r}; choose one of: {', '.join(p.value for p in Plan)}") from e
    if find_account(session, email) is not None:
        raise Conflict("An account with that e-mail already exists.")
    account = Account(email=email, password_hash=_hasher.hash(password), plan=plan,
                      display_name=display_name.strip())
    session.add(account)
    session.flush()
    return account


def authenticate(session: Session, email: str, password: str) -> Account | None:
    """Return the account when the password matches; rehash when the cost parameters changed."""
    account = find_account(session, email)
    if account is None:
        # Spend the same time as a real check so response timing does not reveal which e-mails exist.
        _hasher.hash(password or "")
        return None
    try:
        _hasher.verify(account.password_hash, password or "")
    except (VerificationError, InvalidHashError):
        return None
    if _hasher.check_needs_rehash(account.password_hash):
        account.password_hash = _hasher.hash(password)
    return account


def change_password(session: Session, account: Account, current: str, new: str) -> None:
    try:
        _hasher.verify(account.password_hash, current or "")
    except (VerificationError, InvalidHashError) as e:
        raise InvalidInput("The current password is not correct.") from e
    reset_password(session, account, new)


def reset_password(session: Session, account: Account, new: str) -> None:
    """Set a new password without the current one (the demo loader; an operator's reset)."""
    check_password_strength(new)
    account.password_hash = _hasher.hash(new)
    account.password_changed_at = utcnow()


def set_plan(session: Session, email: str, plan: str) -> Account:
    account = get_account(session, email)
    try:
        account.plan = Plan(plan).value
    except ValueError as e:
        raise InvalidInput(f"Unknown plan {plan!r}; choose one of: {', '.join(p.value for p in Plan)}") from e
    return account
