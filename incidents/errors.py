"""The incident domain's errors: each is one of the kernel's kinds (``hourtab.core.errors``)."""

from __future__ import annotations

from hourtab.core.errors import HourTabError, InvalidInput, NotFound, Unavailable


class IncidentsError(HourTabError):
    """Base of every error the ``incidents`` package raises on purpose."""


class InvalidEvidence(IncidentsError, InvalidInput):
    """A run folder, export, archive or profile we refuse to read; the message says why."""


class EvidenceNotFound(IncidentsError, NotFound):
    """The evidence or incident does not exist, or belongs to another account."""


class ReproUnavailable(IncidentsError, Unavailable):
    """The reproducer needs the ``repro`` extra (torch, transformers) and it is not installed."""
