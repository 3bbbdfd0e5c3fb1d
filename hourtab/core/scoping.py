"""Account isolation as one reusable query pattern.

Every row a consultant owns carries ``account_id``. Reads go through :func:`select_owned` or
:func:`get_owned`, which always filter on the account, so a row of one account is never readable
through another's session: a foreign id looks exactly like a missing one (``NotFound``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import ForeignKey, Select, select
from sqlalchemy.orm import Mapped, Session, declared_attr, mapped_column

from hourtab.core.errors import HourTabError, NotFound

T = TypeVar("T", bound="AccountOwned")


class AccountOwned:
    """Mixin for every model that belongs to one account."""

    if TYPE_CHECKING:
        # Every owned model declares its own key (an integer, or a job's hex string); said here for the
        # type checker only, so the mixin adds no column of its own.
        id: Mapped[Any]

    @declared_attr
    def account_id(cls) -> Mapped[int]:  # noqa: N805 - declared_attr receives the class
        return mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), index=True, nullable=False)


def select_owned(model: type[T], account_id: int) -> Select[T]:
    """``SELECT model WHERE account_id = :account_id``; add filters and ordering to it."""
    return select(model).where(model.account_id == account_id)


def get_owned(session: Session, model: type[T], account_id: int, pk: Any,
              missing: HourTabError | None = None) -> T:
    """Load one row by primary key, only if the account owns it; otherwise raise ``missing`` (the
    caller's own error, with its message) or a plain ``NotFound``."""
    row = session.scalars(select_owned(model, account_id).where(model.id == pk)).first()
    if row is None:
        raise missing or NotFound(f"{model.__name__} {pk} not found")
    return row
