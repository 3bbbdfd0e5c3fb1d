"""Live watchdog on W&B runs: follow the newest run while it is written and raise the watch-overhead
verdict as soon as the run's own evidence supports it (``hourtab watchdog``)."""

from __future__ import annotations

from incidents.tools.watchdog.follow import SCHEMA, Watchdog, newest_run
from incidents.tools.watchdog.observe import Observation, observe

__all__ = ["SCHEMA", "Observation", "Watchdog", "newest_run", "observe"]
