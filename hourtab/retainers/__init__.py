"""Retainers: terms, periods, per-entry rounding, match rules, the exact ledger, and its views.

The arithmetic (``terms``, ``periods``, ``rounding``, ``ledger``, ``forecast``, ``chart``) is pure
and takes frames and dataclasses; ``models`` and ``service`` are the only parts that touch the
database.
"""
