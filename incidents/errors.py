"""The incident domain's exception family; mapped to HTTP statuses in ``app/errors.py``."""

from __future__ import annotations


class IncidentsError(Exception):
    """Base of every error the ``incidents`` package raises on purpose."""


class InvalidEvidence(IncidentsError):
    """A run folder, export, archive or profile we refuse to read; the message says why."""


class EvidenceNotFound(IncidentsError):
    """The evidence or incident does not exist, or belongs to another account."""


class ReproUnavailable(IncidentsError):
    """The reproducer needs the ``repro`` extra (torch, transformers) and it is not installed."""
