"""The words a reader sees: an HTML page without its tags, a PDF through ``pdftotext``; spaces collapsed."""

from __future__ import annotations

import re
import subprocess
from html import unescape


def html_words(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def pdf_words(data: bytes, tmp_path, name: str) -> str:
    """``data`` written to ``tmp_path / name`` and read back by ``pdftotext -layout``."""
    path = tmp_path / name
    path.write_bytes(data)
    out = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True, check=True)
    return " ".join(out.stdout.split())
