"""Live sync from time trackers' APIs (Toggl Track, Clockify, Harvest, Kimai) into the hours ledger.

A connection holds a tracker's API token (encrypted, ``token_box``), which workspace or account it reads
and where its last sync stands (``models``). Each tracker's client (``toggl``, ``clockify``,
``harvest``, ``kimai``) turns the vendor's documented JSON into :class:`remote_entries.RemoteEntry`
values; ``remote_entries`` reads those through the CSV importer's own normaliser, and ``merge`` applies
them to ``time_entries`` with the importer's content hashes and history, then lets the retainers'
assignment service route them, exactly as a CSV import does. ``runner`` is the sync job; ``service`` is
what the web pages and the CLI call.
"""
