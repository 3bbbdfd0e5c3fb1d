"""Imports every model module so ``Base.metadata`` knows every table (Alembic, tests)."""

from hourtab import accounts, ratelimit  # noqa: F401
from hourtab.db import Base

metadata = Base.metadata
