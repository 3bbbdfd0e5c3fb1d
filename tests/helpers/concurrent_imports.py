"""Two imports into one account at the same moment, each in its own session and thread."""

from __future__ import annotations

import threading

from hourtab.core.db import make_engine, make_sessionmaker, transaction
from hourtab.imports.importer import import_file


def import_at_once(database_url: str, account, files: list[bytes]) -> list[object]:
    """Import each of ``files`` into ``account`` in its own thread, all released together; each one's
    ``ImportResult``, or the error it ended with. SQLite may answer "database is locked": that import
    is retried, as a user would."""
    engine = make_engine(database_url)
    factory = make_sessionmaker(engine)
    barrier = threading.Barrier(len(files))
    outcomes: list[object] = []

    def worker(data: bytes) -> None:
        session = factory()
        try:
            me = session.merge(account)
            barrier.wait()
            for _attempt in range(10):
                try:
                    with transaction(session):
                        outcomes.append(import_file(session, me, data, "x.csv"))
                    return
                except Exception as e:
                    if "locked" not in str(e):
                        outcomes.append(e)
                        return
        finally:
            session.close()

    threads = [threading.Thread(target=worker, args=(data,)) for data in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    engine.dispose()
    return outcomes
