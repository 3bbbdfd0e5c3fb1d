"""The tests' own layout stays navigable: what tests share lives in ``tests/helpers/`` (and ``tests/factories``),
fixtures in ``conftest.py`` files, and no file imports a ``conftest.py`` or a test module."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def imported_files(path: Path) -> list[tuple[int, Path]]:
    """The files under ``tests/`` that ``path`` imports anywhere (inside functions too), with the line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # ``from tests.app import test_x`` imports a module; ``from tests.app.test_x import f`` one too.
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            file = ROOT.joinpath(*name.split(".")).with_suffix(".py")
            if name.startswith("tests.") and file.is_file():
                found.append((node.lineno, file))
    return found


def test_no_file_imports_a_conftest_or_a_test_module():
    offenders = [f"{path.relative_to(ROOT)}:{line} imports {file.relative_to(ROOT)}"
                 for path in sorted(TESTS.rglob("*.py"))
                 for line, file in imported_files(path)
                 if file.name == "conftest.py" or file.name.startswith("test_")]
    assert offenders == [], "move what is shared to tests/helpers/ (a fixture: to a conftest.py):\n" + \
        "\n".join(offenders)


def test_every_import_of_a_test_helper_names_a_module_that_exists():
    """Imports inside functions run only with their test: a moved helper must not leave one behind."""
    missing = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tests."):
                where = ROOT.joinpath(*node.module.split("."))
                if not (where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()):
                    missing.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.module}")
    assert missing == []


def test_the_check_sees_an_import_inside_a_function(tmp_path):
    module = tmp_path / "test_example.py"
    module.write_text("def test_x():\n    from tests.app.public.test_alerts import _path\n")
    assert [line for line, _ in imported_files(module)] == [2]
