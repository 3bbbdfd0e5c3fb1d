"""Retainers: terms, periods, per-entry rounding, match rules, the exact ledger, and its views.

The arithmetic (``terms``, ``periods``, ``rounding``, ``ledger``, ``forecast``, ``chart``) is pure
and takes frames and dataclasses. Which retainer each entry counts against is decided by
``routing`` (pure: the rules) and written by ``assign``; ``revisions`` records changes to closed
periods; ``destinations`` is the preview's "where the hours go". ``models``, ``service``,
``assign``, ``revisions``, ``destinations`` and ``repair`` touch the database.
"""
