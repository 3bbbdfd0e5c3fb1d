"""docs/architecture.md's table of layers is the truth: every package is on it, and none imports upwards."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "architecture.md").read_text()
ROW = re.compile(r"^\| `([a-z_/]+)` \| (\d) [a-z ]+ \| .+ \|$", re.M)
#: Below this layer nothing imports Flask (the domains and their tools run without a web app).
FLASK_FROM = 4


def layers() -> dict[str, int]:
    table = DOC.split("## Layers", 1)[1].split("\n## ", 1)[0]
    return {package: int(layer) for package, layer in ROW.findall(table)}


def packages() -> set[str]:
    """Every folder holding Python modules under the three top-level packages."""
    return {str(path.parent.relative_to(ROOT)) for top in ("app", "hourtab", "incidents")
            for path in (ROOT / top).rglob("*.py") if "__pycache__" not in path.parts}


def package_of(module: str, known: set[str]) -> str | None:
    """The deepest known package a dotted module name lies in (``hourtab.core.db`` → ``hourtab/core``)."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        candidate = "/".join(parts[:end])
        if candidate in known:
            return candidate
    return None


def imported(path: Path) -> set[str]:
    """Every absolute module name ``path`` imports, at module level or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def test_every_package_is_on_a_layer_and_every_row_is_a_package():
    table, found = layers(), packages()
    assert len(table) >= 20, "the table was not read"
    assert sorted(found - set(table)) == [], "packages missing from docs/architecture.md"
    assert sorted(set(table) - found) == [], "rows naming no package"


def test_no_package_imports_from_a_higher_layer():
    table = layers()
    known = set(table)
    climbs = []
    for package, layer in sorted(table.items()):
        for path in sorted((ROOT / package).glob("*.py")):
            for module in sorted(imported(path)):
                target = package_of(module, known)
                if target is not None and table[target] > layer:
                    climbs.append(f"{path.relative_to(ROOT)} (layer {layer}) imports {module} (layer {table[target]})")
                if layer < FLASK_FROM and module.split(".")[0] in ("flask", "flask_login", "flask_wtf"):
                    climbs.append(f"{path.relative_to(ROOT)} (layer {layer}) imports {module}")
    assert climbs == []


def test_the_check_sees_a_climb():
    """The import reader finds imports inside functions too (where the domains put their heavy ones)."""
    source = ROOT / "incidents" / "writeups" / "document.py"
    assert "incidents.writeups.report.build" in imported(source)
    assert package_of("incidents.writeups.report.build.build_incident_report", set(layers())) == "incidents/writeups/report"
