"""Errors ``incidents.fastwatch`` raises on purpose.

``FastWatchError`` is also a ``ValueError`` so code written against ``wandb.watch`` (which raises
``ValueError`` for a bad ``log``) catches ours the same way.
"""

from __future__ import annotations

from incidents.errors import IncidentsError


class FastWatchError(IncidentsError, ValueError):
    """A watch we refuse to attach: bad arguments, no W&B run, a model already watched."""
