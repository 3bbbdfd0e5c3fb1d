"""Architecture rules that keep the domain packages usable without a web server or torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_domain_packages_never_import_flask():
    offenders = [str(p.relative_to(ROOT)) for pkg in ("hourtab", "incidents")
                 for p in (ROOT / pkg).rglob("*.py")
                 if _imports(p) & {"flask", "flask_login", "flask_wtf", "werkzeug", "app"}]
    assert offenders == []


def test_domain_packages_load_without_flask_at_runtime():
    """Every module loads without Flask; without the repro extra, only the tools may miss it."""
    code = ("import sys, importlib, pkgutil\n"
            "sys.modules['flask'] = None\n"
            "import hourtab, incidents\n"
            "extra = {'torch', 'transformers', 'numba', 'pynvml'}\n"
            "for pkg in (hourtab, incidents):\n"
            "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
            "        try:\n"
            "            importlib.import_module(m.name)\n"
            "        except ModuleNotFoundError as e:\n"
            "            if not m.name.startswith('incidents.tools.') or (e.name or '').split('.')[0] not in extra:\n"
            "                raise\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr


def test_app_starts_and_serves_without_torch_or_transformers(tmp_path):
    code = ("import sys\n"
            "for name in ('torch', 'transformers', 'pynvml'):\n"
            "    sys.modules[name] = None\n"
            "from app import create_app\n"
            "from app.migrate import upgrade\n"
            f"app = create_app({{'HOURTAB_DATA_DIR': {str(tmp_path)!r}}})\n"
            "upgrade(app.config['DATABASE_URL'])\n"
            "c = app.test_client()\n"
            "assert c.get('/healthz').status_code == 200\n"
            "assert c.get('/login').status_code == 200\n"
            "from app.cli import cli\n"
            "assert 'torch' not in sys.modules or sys.modules['torch'] is None\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr


def _module_graph() -> dict[str, set[str]]:
    """``module -> modules it imports`` over app/, hourtab/ and incidents/, function-level imports too.

    A package importing its own submodules (a blueprint registering its views) is not an edge: the
    submodules import the package for its blueprint, which is how Flask packages are built.
    """
    modules = {}
    for pkg in ("app", "hourtab", "incidents"):
        for path in (ROOT / pkg).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [known(a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [known(f"{node.module}.{a.name}") or known(node.module) for a in node.names]
            else:
                continue
            graph[module] |= {t for t in targets if t and t != module and not t.startswith(f"{module}.")}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                found.append(sorted([v, *component]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circles():
    """Neither between modules nor between the adapters' packages (``app.jobs`` as a whole, with
    ``app.demo`` registering its own job kind rather than being imported by the job handlers)."""
    graph = _module_graph()
    assert _cycles(graph) == []

    def unit(module: str) -> str:
        return ".".join(module.split(".")[:2])

    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        if module.startswith("app."):
            packages.setdefault(unit(module), set()).update(
                unit(t) for t in targets if t.startswith("app.") and unit(t) != unit(module))
    for targets in list(packages.values()):
        for t in targets:
            packages.setdefault(t, set())
    assert _cycles(packages) == []


def test_only_the_job_runner_and_the_transaction_helper_commit():
    """Services take the session and never commit; app/jobs handlers neither (the runner commits)."""
    allowed = {"hourtab/core/jobrunner.py", "hourtab/core/db.py"}
    committing = set()
    for folder in ("app/jobs", "hourtab", "incidents"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "commit":
                    committing.add(str(path.relative_to(ROOT)))
    assert committing - allowed == set()


def test_the_top_level_hours_modules_serve_the_hours_domain_only():
    """``hourtab/*.py`` (billing, settings, statements) are the hours domain's: what incidents or the
    kernel share with it lives in ``hourtab.core``."""
    top = {f"hourtab.{p.stem}" for p in (ROOT / "hourtab").glob("*.py") if p.stem != "__init__"}
    assert {"hourtab.billing", "hourtab.settings", "hourtab.statements"} <= top
    graph = _module_graph()
    users = {m for m, targets in graph.items() if targets & top and m.startswith(("incidents.", "hourtab.core"))}
    assert users == set()


def test_reading_exports_keeping_ledgers_and_importing_point_one_way():
    """Reading exports, keeping ledgers and importing are three rooms: ``timesheets`` needs neither of
    the others, ``retainers`` reads entries but never the code that writes them, and only ``imports``
    (and ``sync`` beside it) knows all three."""
    graph = _module_graph()
    forbidden = {"hourtab.timesheets": ("hourtab.retainers", "hourtab.imports", "hourtab.sync"),
                 "hourtab.retainers": ("hourtab.imports", "hourtab.sync")}
    climbs = sorted(f"{module} imports {target}" for room, above in forbidden.items()
                    for module, targets in graph.items() if module == room or module.startswith(f"{room}.")
                    for target in targets if target.startswith(above))
    assert climbs == []
    assert "hourtab.retainers.assign" in graph["hourtab.imports.importer"], "the check reads no edges"
