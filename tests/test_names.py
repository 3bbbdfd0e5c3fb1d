"""One name, one meaning: a public name (module-level function or class, module file name) defined in
more than one place across ``app/``, ``hourtab/`` and ``incidents/`` means the same thing everywhere.

Three kinds of repetition are the same meaning by construction and need no entry:

- the web surfaces (``app/public``, ``app/consultant``, ``app/cli``, ``app/jobs``, ``app/api``) offer
  the same action under the same name (``token_create`` on a page and as a command);
- an adapter in ``app/`` is named after the domain function or module it calls (``change_password``
  calls ``accounts.change_password``; ``app/db.py`` imports ``hourtab.core.db``);
- each package's role modules (``models``, ``service``, ``errors``) hold that package's tables,
  services and errors.

Every other repetition is listed below with its reason, so a new clash fails until it is renamed
or shown to mean one thing, and a name that is no longer repeated must leave the list.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("app", "hourtab", "incidents")
SURFACES = ("app/public", "app/consultant", "app/cli", "app/jobs", "app/api")
ROLE_MODULES = {"__init__", "models", "service", "errors"}

#: Functions and classes defined more than once with one meaning.
SHARED_DEFINITIONS = {
    "api": "the tracker clients' shared protocol (hourtab/sync/clients): one per tracker",
    "fetch": "the tracker clients' shared protocol",
    "identify": "the tracker clients' shared protocol",
    "init_app": "Flask's extension protocol: each app module wires itself into the factory",
    "needs_touch": "the credential protocol that browser sessions and API tokens share",
    "resolve": "the credential protocol that browser sessions and API tokens share",
    "revoke": "the credential protocol that browser sessions and API tokens share",
    "touch": "the credential protocol that browser sessions and API tokens share (the last-seen stamp)",
    "watch": "fastwatch's light entry point and the heavy implementation it imports lazily (no torch at import)",
    "unwatch": "fastwatch's light entry point and the heavy implementation it imports lazily",
}

#: Module file names used more than once with one meaning.
SHARED_MODULES = {
    "clockify": "one tracker: its CSV export (timesheets) and its API client (sync/clients)",
    "harvest": "one tracker: its CSV export and its API client",
    "kimai": "one tracker: its CSV export and its API client",
    "toggl": "one tracker: its CSV export and its API client",
    "db": "the database: its engine and tables' base (core) and one session per web request (app)",
    "revisions": "revisions of closed periods: recorded (retainers) and listed for a sync's result (sync)",
}


def _modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _place(path: Path) -> str:
    """Where a name is defined; every web surface counts as one place (the same action, offered twice)."""
    rel = path.relative_to(ROOT).as_posix()
    return "app surfaces" if rel.startswith(SURFACES) else rel


def _imported_modules(tree: ast.Module) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name.rsplit(".", 1)[-1] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.update(a.name for a in node.names)
            found.add((node.module or "").rsplit(".", 1)[-1])
    return found


def _called_names(tree: ast.Module) -> set[str]:
    return {n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
            for n in ast.walk(tree) if isinstance(n, ast.Call)}


def _clashes() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    definitions: dict[str, set[str]] = defaultdict(set)
    modules: dict[str, set[str]] = defaultdict(set)
    for path in _modules():
        tree = ast.parse(path.read_text(), filename=str(path))
        in_app = path.relative_to(ROOT).parts[0] == "app"
        if path.stem not in ROLE_MODULES and not (in_app and path.stem in _imported_modules(tree)):
            modules[path.stem].add(_place(path))
        calls = _called_names(tree)
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            if node.name.startswith("_") or (in_app and node.name in calls):
                continue
            definitions[node.name].add(_place(path))
    return ({n: p for n, p in definitions.items() if len(p) > 1},
            {n: p for n, p in modules.items() if len(p) > 1})


def test_every_name_defined_twice_means_one_thing_or_is_listed():
    definitions, modules = _clashes()
    unlisted_definitions = set(definitions) - set(SHARED_DEFINITIONS)
    unlisted_modules = set(modules) - set(SHARED_MODULES)
    assert {n: sorted(definitions[n]) for n in unlisted_definitions} == {}
    assert {n: sorted(modules[n]) for n in unlisted_modules} == {}


def test_the_lists_hold_only_names_still_defined_twice():
    definitions, modules = _clashes()
    assert set(SHARED_DEFINITIONS) - set(definitions) == set()
    assert set(SHARED_MODULES) - set(modules) == set()

