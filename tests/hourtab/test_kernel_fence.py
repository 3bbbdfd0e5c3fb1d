"""The kernel (``hourtab/core``) stands alone: no Flask, no hours domain, no incidents, no app."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "hourtab" / "core"
FORBIDDEN = ("flask", "werkzeug", "app", "incidents", "hourtab.timesheets", "hourtab.retainers",
             "hourtab.statements")
MOVED = ("db", "scoping", "errors", "accounts", "ratelimit", "blobs", "pdf", "resources")


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_kernel_imports_nothing_above_it():
    offenders = {f"{p.name}: {name}" for p in CORE.glob("*.py") for name in _imported(p)
                 if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)}
    assert offenders == set()


@pytest.mark.parametrize("name", MOVED)
def test_old_module_paths_are_the_kernel_modules(name):
    assert importlib.import_module(f"hourtab.{name}") is importlib.import_module(f"hourtab.core.{name}")
