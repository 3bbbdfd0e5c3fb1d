"""Consultant accounts: sign-up, authentication, password changes and plans.

Passwords are hashed with Argon2id (argon2-cffi): memory-hard, the current OWASP first choice,
and its hashes carry their own parameters so we can raise the cost later and rehash on login.
"""

from __future__ import annotations

import datetime as dt
import enum
import unicodedata
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from email_validator import EmailNotValidError, validate_email
from sqlalchemy import Integer, String, func, select, update
from sqlalchemy.orm import Mapped, Session, mapped_column

from hourtab.core import sessions
from hourtab.core.db import Base, UTCDateTime, utcnow
from hourtab.core.errors import Conflict, InvalidInput, NotFound
from hourtab.core.scoping import AccountOwned
from hourtab.core.values import single_line

MIN_PASSWORD_LENGTH = 10
_hasher = PasswordHasher()


class Plan(enum.StrEnum):
    """The plans an account can be on; what each one gives is the hours domain's (``hourtab.billing``)."""

    FREE = "free"
    PRO = "pro"



class Account(Base):
    __tablename__ = "accounts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    email: Mapped[str] = mapped_column(String(320), unique=True, nullable=False)
    password_hash: Mapped[str] = mapped_column(String(255), nullable=False)
    plan: Mapped[str] = mapped_column(String(16), nullable=False, default=Plan.FREE.value)
    display_name: Mapped[str] = mapped_column(String(200), nullable=False, default="")
    contact: Mapped[str] = mapped_column(String(320), nullable=False, default="")
    timezone: Mapped[str] = mapped_column(String(64), nullable=False, default="UTC")
    #: The hours domain's settings, kept on the account row as plain values and interpreted there
    #: (``hourtab.settings``, ``hourtab.billing``): the default rounding of new retainers and the unit hours are written in.
    rounding_min: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default="0")
    hours_unit: Mapped[str] = mapped_column(String(8), nullable=False, default="decimal", server_default="decimal")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    password_changed_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)

    @property
    def name_or_email(self) -> str:
        return self.display_name or self.email


class PlanRequest(AccountOwned, Base):
    """A consultant's request to change plan, settled by the billing provider (or the operator)."""

    __tablename__ = "plan_requests"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    plan: Mapped[str] = mapped_column(String(16), nullable=False)
    provider: Mapped[str] = mapped_column(String(32), nullable=False)
    #: "pending" until the provider or the operator settles it: "confirmed" or "cancelled".
    status: Mapped[str] = mapped_column(String(16), nullable=False, default="pending")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    decided_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime(), nullable=True)


def normalize_email(email: str) -> str:
    """The one canonical spelling of an address, used to store, find and rate-limit accounts.

    Unicode NFKC first (full-width ``ＥＸＡＭＰＬＥ`` is ``EXAMPLE``), then syntax and IDNA
    processing of the domain by email-validator (no DNS lookups: the machine may be offline),
    then case-folding. Any two spellings that reach the same account share one key.
    """
    text = unicodedata.normalize("NFKC", (email or "").strip())
    try:
        result = validate_email(text, check_deliverability=False)
    except EmailNotValidError as e:
        raise InvalidInput(f"That e-mail address is not valid: {e}") from e
    return unicodedata.normalize("NFKC", result.normalized.casefold())


def login_key(email: str) -> str:
    """Rate-limit key for a typed-in address: the account's canonical spelling when it has one."""
    try:
        return normalize_email(email)
    except InvalidInput:
        return unicodedata.normalize("NFKC", (email or "").strip()).casefold()[:320]


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


def check_zone(name: str | None) -> str:
    """An IANA zone name as given (``UTC`` when empty); an unknown one is refused."""
    name = (name or "").strip() or "UTC"
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise InvalidInput(f"Unknown time zone {name!r}; use an IANA name such as Europe/Berlin.") from e
    return name


def create_account(session: Session, email: str, password: str, plan: str = Plan.FREE.value,
                   display_name: str = "", timezone: str = "UTC") -> Account:
    """Create an account; the caller commits. Refuses duplicates before the unique index does."""
    email = normalize_email(email)
    timezone = check_zone(timezone)
    check_password_strength(password)
    try:
        plan = Plan(plan).value
    except ValueError as e:
        raise InvalidInput(f"Unknown plan {plan!r}; choose one of: {', '.join(p.value for p in Plan)}") from e
    if find_account(session, email) is not None:
        raise Conflict("An account with that e-mail already exists.")
    account = Account(email=email, password_hash=_hasher.hash(password), plan=plan,
                      display_name=single_line(display_name), timezone=timezone)
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
    sessions.revoke_all(session, account.id)


def lock_account(session: Session, account_id: int) -> None:
    """Hold the account's row until the transaction ends, so that check-then-write on its behalf is serial.

    PostgreSQL takes a row lock (``SELECT … FOR UPDATE``). SQLite ignores ``FOR UPDATE`` and its
    driver runs plain reads outside any transaction, so there a no-op ``UPDATE`` takes the
    database's write lock instead, before anything is counted.
    """
    if session.get_bind().dialect.name == "sqlite":
        session.execute(update(Account).where(Account.id == account_id).values(id=Account.id))
    else:
        session.execute(select(Account.id).where(Account.id == account_id).with_for_update())


def set_plan(session: Session, email: str, plan: str) -> Account:
    """The operator's word on a plan: applies it and settles the account's pending requests."""
    account = get_account(session, email)
    try:
        account.plan = Plan(plan).value
    except ValueError as e:
        raise InvalidInput(f"Unknown plan {plan!r}; choose one of: {', '.join(p.value for p in Plan)}") from e
    for request in session.scalars(select(PlanRequest).where(PlanRequest.account_id == account.id,
                                                             PlanRequest.status == "pending")):
        request.status = "confirmed" if request.plan == account.plan else "cancelled"
        request.decided_at = utcnow()
    return account
