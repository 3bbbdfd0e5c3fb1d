"""Where the folders kept at the top of the checkout (templates, migrations) are found.

In a checkout (or an editable install) they sit beside the packages; a wheel carries them inside
this package under ``_data/`` (see ``force-include`` in pyproject.toml), which is looked at first.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]


def resource_path(name: str) -> Path:
    """The installed copy of ``name`` (``templates``, ``migrations``, ``alembic.ini``) or the checkout's."""
    shipped = Path(str(files("hourtab") / "_data" / name))
    return shipped if shipped.exists() else CHECKOUT / name


def pages_dir() -> Path:
    """Templates of the web pages (Flask's template folder)."""
    return resource_path("templates") / "pages"


def documents_dir() -> Path:
    """Templates of the documents: statements, incident reports, e-mails."""
    return resource_path("templates") / "documents"
