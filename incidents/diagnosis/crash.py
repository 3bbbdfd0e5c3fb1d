"""The crash rule: why a run ended before it finished, read from its exit code and console.

A crash (an uncaught exception, exit code 1; a kill; another exit code) is an engineering finding
that names the exception, the line of the user's code it came through and its cause class
(``incidents.evidence.wandb.tracebacks``), and how far the run got. A run stopped by hand
(``KeyboardInterrupt``, exit code 255, or a framework's graceful shutdown that exits with 0) is
*interrupted*: not a defect, and every other rule judges only the steps it logged.
"""

from __future__ import annotations

from typing import Any

from incidents.diagnosis import signals
from incidents.diagnosis.findings import Finding, not_fired
from incidents.diagnosis.subject import Subject

WOULD_DECIDE = ["the run's console (files/output.log, or console capture in the .wandb file): its last traceback names "
                "the exception and the line", "the job scheduler's record of the process (out-of-memory kill, "
                "time limit)"]


def crash(subject: Subject) -> Finding:
    """Fires for a run that crashed, was killed, or exited with an error code."""
    rule = "crash"
    run = subject.run
    ending: dict[str, Any] = dict(getattr(run, "ending", None) or {})
    how = ending.get("how")
    where = signals.planned_share(run)
    label = subject.run_label
    evidence = {k: v for k, v in ending.items() if k in ("how", "exit_code", "exception", "message", "user_frame",
                                                         "cause", "fix", "detail")}
    evidence.update(progress=where, source=f"{label} {ending.get('source') or 'exit record'}")
    if how in (None, "finished"):
        return not_fired(rule, "The run finished (exit code 0)." if how else "Not checked: nothing records how the run "
                               "ended (no exit code, no console).", **evidence)
    if how == "interrupted":
        said = f" ({ending['detail']})" if ending.get("detail") else ""
        return not_fired(rule, f"Interrupted by hand{said}{', ' + where if where else ''}: not a defect; the other "
                               "rules judge only the steps it logged.", **evidence)
    if how == "unfinished":
        return not_fired(rule, "No exit record: the run was still being written, or killed before W&B closed it"
                               f"{', ' + where if where else ''}; the rules judge the steps it logged.", **evidence)
    return _crashed(rule, ending, where, evidence)


def _crashed(rule: str, ending: dict[str, Any], where: str | None, evidence: dict[str, Any]) -> Finding:
    how = ending["how"]
    stopped = {"crashed": "Crashed", "killed": "Killed", "exited": f"Exited with code {ending.get('exit_code')}"}[how]
    if not ending.get("exception"):
        evidence["would_decide"] = list(WOULD_DECIDE)
        detail = ending.get("detail") or f"exit code {ending.get('exit_code')}"
        return Finding(rule, True, "engineering",
                       f"{stopped}{' ' + where if where else ''}: {detail}. No traceback was captured, so the "
                       "exception and its line are not known.", evidence, 0.6 if how == "crashed" else 0.5)
    frame = ending.get("user_frame") or {}
    line = (f" in {frame['file']} line {frame['line']} ({frame['function']})" + (f": `{frame['code']}`" if frame.get("code")
            else "")) if frame else " (no frame of the user's own code in the traceback)"
    message = f": {ending['message']}" if ending.get("message") else ""
    return Finding(rule, True, "engineering",
                   f"{stopped}{' ' + where if where else ''}: {ending['exception']}{message}{line}. Cause: "
                   f"{ending['cause']}; the usual fix: {ending['fix']}.", evidence, 0.9)
