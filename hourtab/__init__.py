"""HourTab's domain code below the web app: the kernel and the retainer-hours domain.

``hourtab.core`` is the kernel both domains stand on (database base and sessions, accounts and
credentials, the error family, blobs, jobs, mail, documents and PDFs, values, the SVG chart); it
imports nothing else of ``hourtab`` or ``incidents``. The rest is the retainer-hours domain:
time-tracker CSV readers and entries (``timesheets``), live sync (``sync``), retainers, periods and
the ledger (``retainers``), statements, invoices and alerts. The incident domain lives beside it in
``incidents``, on the same kernel.

Plain Python over dataclasses, DataFrames and SQLAlchemy models; never imports Flask, so every
piece is testable without a server and reusable from the CLI.
"""
