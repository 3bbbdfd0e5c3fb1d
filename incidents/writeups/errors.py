"""The write-ups' errors."""

from __future__ import annotations

from incidents.errors import InvalidEvidence


class InvalidIncident(InvalidEvidence):
    """An edit we refuse (unknown role or phase, empty title); the message says what is allowed."""
