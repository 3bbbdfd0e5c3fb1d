"""The reproducer's training modes and their command-line spelling.

A mode is what gets attached to the model before training: nothing (``baseline``), wandb's own
``wandb.watch`` (``watch:<log>:<freq>``), or HourTab's low-overhead watch
(``fastwatch:<log>:<freq>``). Parsing lives here so the CLI, the runner and the benchmark agree on one
spelling, and a typo fails before any model is built.
"""

from __future__ import annotations

from dataclasses import dataclass

from hourtab.core.errors import InvalidInput
from incidents.errors import IncidentsError

KINDS = ("baseline", "watch", "fastwatch")
LOGS = ("gradients", "parameters", "all")
DEFAULT_MODES = "baseline,watch:all:1,watch:gradients:100"


class InvalidReproArgument(IncidentsError, InvalidInput, ValueError):
    """A reproducer setting we refuse before building anything; the message says what is allowed."""


class InvalidMode(InvalidReproArgument):
    """A mode string we cannot parse; the message lists the allowed spellings."""


@dataclass(frozen=True)
class Mode:
    """One way of training: ``kind`` plus, for the watch kinds, what is logged and how often."""

    kind: str
    log: str | None = None
    log_freq: int | None = None

    def __str__(self) -> str:
        if self.kind == "baseline":
            return "baseline"
        return f"{self.kind}:{self.log}:{self.log_freq}"

    @property
    def watches(self) -> bool:
        return self.kind != "baseline"


_ALLOWED = ("baseline, watch:<gradients|parameters|all>:<freq>, "
            "fastwatch:<gradients|parameters|all>:<freq> (freq a positive integer)")


def parse_mode(text: str) -> Mode:
    """Parse one mode such as ``watch:all:1``; raise :class:`InvalidMode` naming the allowed values."""
    spec = text.strip()
    parts = spec.split(":")
    if parts == ["baseline"]:
        return Mode("baseline")
    if len(parts) != 3 or parts[0] not in KINDS[1:]:
        raise InvalidMode(f"Unknown mode {spec!r}; allowed: {_ALLOWED}.")
    kind, log, freq_text = parts
    if log not in LOGS:
        raise InvalidMode(f"Mode {spec!r}: log must be one of {', '.join(LOGS)}, not {log!r}.")
    try:
        freq = int(freq_text)
    except ValueError:
        freq = 0
    if freq < 1:
        raise InvalidMode(f"Mode {spec!r}: freq must be a positive integer, not {freq_text!r}.")
    return Mode(kind, log, freq)


def parse_modes(text: str | list[str] | tuple[str, ...]) -> list[Mode]:
    """Parse a comma-separated list (or several such strings); duplicates are refused."""
    items = [text] if isinstance(text, str) else list(text)
    modes = [parse_mode(part) for item in items for part in item.split(",") if part.strip()]
    if not modes:
        raise InvalidMode(f"No modes given; allowed: {_ALLOWED}.")
    seen: set[Mode] = set()
    for mode in modes:
        if mode in seen:
            raise InvalidMode(f"Mode {mode} is listed twice.")
        seen.add(mode)
    return modes
