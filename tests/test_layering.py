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
    code = ("import sys, importlib, pkgutil\n"
            "sys.modules['flask'] = None\n"
            "import hourtab, incidents\n"
            "for pkg in (hourtab, incidents):\n"
            "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
            "        importlib.import_module(m.name)\n")
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
