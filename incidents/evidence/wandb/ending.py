"""How a run ended: finished, interrupted (Ctrl-C), crashed, exited with a code, or never closed.

The W&B SDK writes an exit record when the run closes: code 0 on success, 255 when the script
died of ``KeyboardInterrupt`` (its exit hook's convention), 1 for any other uncaught exception,
and the code given to ``sys.exit`` otherwise. A run killed outright (SIGKILL, out of memory, a lost
node) writes none. The console (``output.log``, or the ``.wandb`` file's output records) can say
more: a traceback's last line names the exception, and frameworks that catch Ctrl-C themselves
(``Detected KeyboardInterrupt, attempting graceful shutdown``) still exit with 0.
"""

from __future__ import annotations

import re
from typing import Any

from incidents.evidence.wandb.tracebacks import last_traceback

INTERRUPT = re.compile(r"\bKeyboardInterrupt\b")
#: The last line of a Python traceback: ``SomeError: message`` (or a bare exception name).
EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b.*)$")
KILLED = re.compile(r"^(Killed|Terminated)\s*$")


def _console(lines: list[str]) -> tuple[str | None, str | None, int | None]:
    """(what the console shows, the line that shows it, its number) from the last traceback on."""
    last_tb = max((i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")),
                  default=None)
    if any(INTERRUPT.search(line) for line in lines[last_tb or 0:]):
        at = next(i for i in range(len(lines) - 1, -1, -1) if INTERRUPT.search(lines[i]))
        return "interrupted", lines[at].strip(), at + 1
    if last_tb is not None:
        for i in range(len(lines) - 1, last_tb, -1):
            if EXCEPTION_LINE.match(lines[i].strip()):
                return "crashed", lines[i].strip()[:300], i + 1
    killed = next((i for i in range(len(lines) - 1, -1, -1) if KILLED.match(lines[i].strip())), None)
    if killed is not None:
        return "killed", lines[killed].strip(), killed + 1
    return None, None, None


def run_ending(exit_code: int | None, console: list[str], exit_source: str, console_source: str) -> dict[str, Any]:
    """``{"how", "exit_code", "detail", "source"}`` from the exit code and the console's last lines, and
    for a run that did not finish, what its last traceback shows (``tracebacks.last_traceback``):
    ``exception``, ``message``, ``user_frame``, ``cause``, ``fix``."""
    ending = _ending(exit_code, console, exit_source, console_source)
    if ending["how"] != "finished":
        shown = last_traceback(console)
        if shown is not None:
            ending.update(shown)
    return ending


def _ending(exit_code: int | None, console: list[str], exit_source: str, console_source: str) -> dict[str, Any]:
    seen, line, number = _console(console)
    detail = f"{line} ({console_source}, line {number} of the last {len(console)})" if line else None
    if exit_code is None:
        how = seen or "unfinished"
        why = "no exit record: the run was still being written, or the process was killed before W&B closed it"
        return {"how": how, "exit_code": None, "detail": detail or why,
                "source": console_source if seen else exit_source}
    if exit_code == 255:
        how = "interrupted"
        detail = detail or "exit code 255: W&B's code for a KeyboardInterrupt (Ctrl-C)"
    elif exit_code == 0:
        how = "interrupted" if seen == "interrupted" else "finished"
    elif seen in ("crashed", "killed", "interrupted"):
        how = seen
    else:
        how = "crashed" if exit_code == 1 else "exited"
        detail = detail or (f"exit code {exit_code}: an uncaught exception" if exit_code == 1
                            else f"exit code {exit_code}")
    source = exit_source + (f"; {console_source}" if line else "")
    return {"how": how, "exit_code": int(exit_code), "detail": detail, "source": source}
