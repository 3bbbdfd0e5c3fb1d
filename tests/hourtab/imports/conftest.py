"""The importer tests use the same real samples and account as the readers' tests."""

from __future__ import annotations

from tests.hourtab.timesheets.conftest import account

__all__ = ["account"]
