"""Errors ``incidents.tools.fastwatch`` raises on purpose.

``FastWatchError`` is also a ``ValueError`` so code written against ``wandb.watch`` (which raises
``ValueError`` for a bad ``log``) catches ours the same way. It belongs to the kernel's family,
not the incident domain's: fastwatch is a tool the domain uses, not part of it.
"""

from __future__ import annotations

from hourtab.core.errors import InvalidInput


class FastWatchError(InvalidInput, ValueError):
    """A watch we refuse to attach: bad arguments, no W&B run, a model already watched."""
