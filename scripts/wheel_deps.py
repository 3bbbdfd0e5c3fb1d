"""Fail when the installed hourtab imports a distribution its metadata does not require.

Run with the interpreter of a venv where the wheel is installed (scripts/wheel_smoke.sh does): a
package that only arrives as another's dependency must still be declared if our code imports it.
"""

from __future__ import annotations

import ast
import re
import sys
from importlib import metadata
from pathlib import Path

OURS = {"app", "hourtab", "incidents", "migrations"}
#: Import names of optional (extra) distributions that need not be installed for this check.
NOT_INSTALLED = {"pynvml": "nvidia-ml-py", "torch": "torch", "transformers": "transformers", "numba": "numba"}


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def main() -> int:
    dist = metadata.distribution("hourtab")
    declared = {normalise(re.split(r"[ ;<>=!~\[]", req, maxsplit=1)[0]) for req in dist.requires or []}
    owners = metadata.packages_distributions()
    missing: dict[str, set[str]] = {}
    for package in ("app", "hourtab", "incidents"):
        root = Path(str(dist.locate_file(package)))
        for path in root.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module]
                else:
                    continue
                for top in {n.split(".")[0] for n in names}:
                    if top in OURS or top in sys.stdlib_module_names or top == "__future__":
                        continue
                    dists = {normalise(d) for d in owners.get(top, [NOT_INSTALLED.get(top, top)])}
                    if not dists & declared:
                        missing.setdefault(top, set()).add(str(path.relative_to(root.parent)))
    for top, files in sorted(missing.items()):
        print(f"imported but not a declared dependency: {top} (in {', '.join(sorted(files)[:3])})")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
