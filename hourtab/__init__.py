"""Retainer-hours domain: time-tracker CSV readers, entries, retainers, periods, ledger, statements.

Plain Python over dataclasses, DataFrames and SQLAlchemy models; never imports Flask, so every
piece is testable without a server and reusable from the CLI.
"""
