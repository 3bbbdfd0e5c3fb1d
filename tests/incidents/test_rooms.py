"""``incidents/`` is four rooms: evidence, diagnosis and writeups never import a tool, and only the
tools (fastwatch, repro, audit, watchdog) import torch and its companions."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INCIDENTS = ROOT / "incidents"
ROOMS = ("evidence", "diagnosis", "writeups", "tools")
TORCH = {"torch", "transformers", "numba", "pynvml"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_incidents_holds_four_rooms_and_nothing_loose_but_its_errors():
    rooms = {p.name for p in INCIDENTS.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    loose = {p.name for p in INCIDENTS.glob("*.py")}
    assert rooms == set(ROOMS)
    assert loose == {"__init__.py", "errors.py"}


def test_evidence_diagnosis_and_writeups_never_import_tools():
    offenders = {f"{p.relative_to(ROOT)}: {name}" for room in ROOMS[:3] for p in (INCIDENTS / room).rglob("*.py")
                 for name in _imports(p) if name == "incidents.tools" or name.startswith("incidents.tools.")}
    assert offenders == set()


def test_only_tools_import_torch():
    outside = [p for pkg in ("app", "hourtab", "incidents") for p in (ROOT / pkg).rglob("*.py")
               if not p.is_relative_to(INCIDENTS / "tools")]
    offenders = {f"{p.relative_to(ROOT)}: {name}" for p in outside for name in _imports(p)
                 if name.split(".")[0] in TORCH}
    assert offenders == set()
