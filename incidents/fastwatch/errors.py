"""Errors ``incidents.fastwatch`` raises on purpose.

``FastWatchError`` is also a ``ValueError`` so code written against ``wandb.watch`` (which raises
``ValueError`` for a bad ``log``) catches ours the same way. It is not an incident-domain error:
fastwatch runs inside a user's training script, apart from HourTab's services.
"""

from __future__ import annotations


class FastWatchError(ValueError):
    """A watch we refuse to attach: bad arguments, no W&B run, a model already watched."""
