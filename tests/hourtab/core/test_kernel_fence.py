"""The kernel (``hourtab/core``) stands alone: it imports only the standard library, the packages
HourTab declares as dependencies, and itself. An allow-list, so a new import of anything else
(Flask, a domain, the app, an undeclared package) fails here."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CORE = ROOT / "hourtab" / "core"
#: Declared for the web adapter, never for the kernel (it runs in workers and the CLI without Flask).
WEB = {"flask", "flask_login", "flask_wtf", "werkzeug", "wtforms", "gunicorn"}


def _kernel_packages() -> set[str]:
    """Import names of the declared distributions, less the web ones and our own."""
    return _declared_import_names() - WEB - {"app", "hourtab", "incidents"}


def _declared_import_names() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {re.sub(r"[-_.]+", "-", re.split(r"[ ;<>=!~\[]", r, maxsplit=1)[0]).lower()
                for r in project["dependencies"]}
    return {top for top, dists in metadata.packages_distributions().items()
            if any(re.sub(r"[-_.]+", "-", d).lower() in declared for d in dists)}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _allowed(name: str, packages: set[str]) -> bool:
    top = name.split(".")[0]
    return (top in sys.stdlib_module_names or top == "__future__" or top in packages
            or name == "hourtab.core" or name.startswith("hourtab.core."))


def test_kernel_imports_only_the_standard_library_declared_packages_and_itself():
    packages = _kernel_packages()
    offenders = {f"{p.relative_to(ROOT)}: {name}" for p in CORE.rglob("*.py") for name in _imports(p)
                 if not _allowed(name, packages)}
    assert offenders == set()


def test_the_allow_list_refuses_what_it_must():
    packages = _kernel_packages()
    for name in ("flask", "werkzeug", "hourtab.retainers", "hourtab.sessions", "incidents.evidence", "app.db",
                 "torch"):
        assert not _allowed(name, packages), name
    assert _allowed("sqlalchemy.orm", packages) and _allowed("hourtab.core.db", packages)


def test_no_module_replaces_itself_in_sys_modules():
    offenders = [str(p.relative_to(ROOT)) for pkg in ("app", "hourtab", "incidents")
                 for p in (ROOT / pkg).rglob("*.py") if re.search(r"sys\.modules\[[^\]]+\]\s*=", p.read_text())]
    assert offenders == []
