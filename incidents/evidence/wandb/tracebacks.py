"""Read the last Python traceback a run's console shows: the exception, the user's line, the cause.

Console lines come from ``files/output.log`` (or ``output.log`` beside the files of wandb 0.8),
or the ``.wandb`` file's output records. The *user's line* is the deepest frame outside the
Python installation and its packages (``site-packages``, ``dist-packages``, ``lib/python3.x``,
frozen and ``<string>`` modules): where the user's code called into what failed. The *cause* is
an engineering class read from the exception and its message (:data:`CAUSES`), with the usual fix.
"""

from __future__ import annotations

import re
from typing import Any

TRACEBACK = "Traceback (most recent call last)"
#: ``File "train.py", line 12, in main`` (CPython) and ``/path/train.py:12 in main`` (rich, Lightning).
FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)'
                   r'|(?P<rfile>(?:[A-Za-z]:)?[\\/][^\s:│]+\.py):(?P<rline>\d+) in (?P<rfunction>\S+)')
#: The last line of a traceback: ``SomeError: message`` or a bare exception name.
EXCEPTION = re.compile(r"^(?P<name>[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning|Iteration))"
                       r"(?::\s*(?P<message>.*))?$")
LIBRARY = re.compile(r"[\\/](site-packages|dist-packages)[\\/]|[\\/]lib[\\/]python\d[\d.]*[\\/]"
                     r"|[\\/]Python\d+[\\/]Lib[\\/]|^<|[\\/]runpy\.py$|[\\/]importlib[\\/]", re.IGNORECASE)

#: (cause, pattern over "Exception: message", the usual fix); the first that matches names the cause.
CAUSES: tuple[tuple[str, re.Pattern[str], str], ...] = tuple((name, re.compile(pattern, re.IGNORECASE), fix)
                                                            for name, pattern, fix in (
    ("interrupted by hand", r"^KeyboardInterrupt", "nothing to fix in the code: the run was stopped (Ctrl-C)"),
    ("out of GPU memory", r"OutOfMemoryError|out of memory|CUBLAS_STATUS_ALLOC_FAILED",
     "a smaller batch or sequence length, gradient accumulation, mixed precision or activation checkpointing, "
     "or memory another process holds on the GPU freed"),
    ("device mismatch", r"same device|device type|different devices|Input type \(.*\) and weight type|"
                        r"parameters and buffers on device",
     "the model and every batch on one device (evaluation batches included: .to(device) where they are made)"),
    ("missing file or directory", r"FileNotFoundError|No such file or directory|does not exist|cannot be opened",
     "the directory created before the first save (os.makedirs(path, exist_ok=True)) or the path corrected"),
    ("file already exists", r"FileExistsError|File exists",
     "a fresh output directory per run, or exist_ok=True where the script creates it"),
    ("non-finite values", r"\bnan\b|not finite|\binf\b",
     "the first non-finite loss or gradient found (a lower learning rate, gradient clipping, checked inputs)"),
    ("tensor shape mismatch", r"size mismatch|must match the size|cannot be multiplied|Target size .* must be the same|"
                              r"Expected input batch_size|size of tensor|shape|dimension|stack expects",
     "the shapes made to agree where the model meets the data (print them at the failing line)"),
    ("data loader worker failure", r"DataLoader worker",
     "num_workers=0 to see the worker's own error, then the dataset fixed (on Windows, the entry point guarded "
     "by if __name__ == '__main__')"),
    ("CUDA unavailable or failing", r"No CUDA GPUs|CUDA error|CUDA driver|re-initialize CUDA|cuda runtime",
     "the GPU visible to the process (CUDA_VISIBLE_DEVICES, the driver) or the device set to what exists"),
    ("checkpoint write failure", r"inline_container|No space left|unexpected pos|PytorchStreamWriter",
     "free disk space where checkpoints are written, and a path on a local disk"),
    ("distributed setup", r"NCCL|ProcessGroup|c10d|init_process_group", "the launcher's rank and world-size settings"),
    ("misconfigured callback or trainer", r"Misconfiguration|conditioned on metric|is not available\. Pass in",
     "the monitored metric logged under the name the callback expects, or the callback's setting corrected"),
    ("error in the training code", r"^(NameError|AttributeError|TypeError|UnboundLocalError|ImportError|"
                                   r"ModuleNotFoundError|SyntaxError|IndentationError|NotImplementedError)",
     "the training script corrected at the line shown"),
    ("index or key out of range", r"^(IndexError|KeyError)",
     "the index or key checked against the data (labels within the number of classes, dictionary keys present)"),
    ("failed assertion", r"^AssertionError", "the asserted condition made to hold before the call"),
    ("invalid value", r"ValueError|RuntimeError", "the value checked where the script passes it"),
))


def last_traceback(lines: list[str]) -> dict[str, Any] | None:
    """The last traceback in ``lines``: exception, message, the user's frame, the cause; None if none."""
    starts = [i for i, line in enumerate(lines) if TRACEBACK in line]
    if not starts:
        return None
    block = lines[starts[-1] + 1:]
    frames = [_frame(m) for line in block if (m := FRAME.search(line))]
    exception = None
    for i in range(len(block) - 1, -1, -1):
        if (m := EXCEPTION.match(block[i].strip().strip("│").strip())) is not None:
            exception = m
            break
    if exception is None:
        return None
    name = exception.group("name")
    message = (exception.group("message") or "").strip()[:300]
    user = _user_frame(frames, block)
    cause, fix = cause_of(name, message)
    return {"exception": name, "message": message, "user_frame": user, "cause": cause, "fix": fix}


def cause_of(name: str, message: str) -> tuple[str, str]:
    """The engineering cause class of ``name: message`` and the usual fix."""
    text = f"{name}: {message}"
    short = name.rsplit(".", 1)[-1]
    for cause, pattern, fix in CAUSES:
        if pattern.search(text) or pattern.search(f"{short}: {message}"):
            return cause, fix
    return "uncaught exception", "the exception handled or its cause removed"


def _frame(match: re.Match[str]) -> dict[str, Any]:
    if match.group("file"):
        return {"path": match.group("file"), "line": int(match.group("line")), "function": match.group("function")}
    return {"path": match.group("rfile"), "line": int(match.group("rline")), "function": match.group("rfunction")}


def _user_frame(frames: list[dict[str, Any]], block: list[str]) -> dict[str, Any] | None:
    """The deepest frame in the user's own code, with its file's name and the code line shown."""
    for frame in reversed(frames):
        if LIBRARY.search(frame["path"]):
            continue
        code = _code_after(frame, block)
        name = re.split(r"[\\/]", frame["path"])[-1]
        return {"file": name, "line": frame["line"], "function": frame["function"], "code": code}
    return None


def _code_after(frame: dict[str, Any], block: list[str]) -> str | None:
    """The source line CPython prints under a frame's ``File …`` line."""
    marker = f'line {frame["line"]}, in {frame["function"]}'
    for i, line in enumerate(block):
        if marker in line and frame["path"] in line and i + 1 < len(block):
            code = block[i + 1].strip()
            if code and not FRAME.search(code) and not set(code) <= set("^~ "):
                return code[:200]
    return None
