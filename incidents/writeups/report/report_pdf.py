"""The report as a PDF, through HourTab's one safe WeasyPrint renderer, cached by its inputs.

``hourtab.core.pdf.render_pdf`` serves only ``data:`` URIs and bundled assets (charts are data URIs, the
font is bundled), so a hostile run name or Markdown section cannot make the renderer fetch anything.
The cache key hashes the inputs, not the HTML, so a re-download skips chart drawing and templating
as well as WeasyPrint.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, is_dataclass
from typing import Any

from hourtab.core.pdf import PdfMeta, meta_tags
from hourtab.core.resources import documents_dir
from incidents.writeups.report.build import Report
from incidents.writeups.report.html import render_html
from incidents.writeups.report.inputs import ReportInput

#: Bump when the report's layout or computations change, so old cached PDFs are not served.
REPORT_VERSION = "2"


def pdf_html(report: Report) -> str:
    """The final HTML handed to WeasyPrint (the benchmark times WeasyPrint alone on this)."""
    inputs = report.inputs
    created = inputs.created
    if created is None:
        created = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    meta = meta_tags(PdfMeta(title=inputs.title, author=inputs.author or "HourTab", created=created))
    return render_html(report, pdf=True, meta_html=meta)


def _jsonable(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {k: _jsonable(v) for k, v in asdict(value).items()} if not hasattr(value, "history") else None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value if isinstance(value, str | int | float | bool | type(None)) else str(value)


def _templates_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted((documents_dir() / "incidents").glob("*")):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()


def cache_key(inputs: ReportInput) -> str:
    """A hash of everything the PDF depends on: the human parts, evidence refs, entries, templates.

    Runs and profiles enter by their ``ref`` (stored id + content hash), not their data, so the key
    is cheap to compute on every download.
    """
    human = {k: _jsonable(getattr(inputs, k)) for k in ("title", "slug", "status", "author", "environment",
                                                         "sections", "fix_before", "fix_after", "log_entry",
                                                         "entries", "actions", "events", "created",
                                                         "severity", "incident_status", "milestones",
                                                         "gpu_hour_price", "currency")}
    refs = {"runs": [(r.role, r.ref or getattr(r.run, "run_id", "")) for r in inputs.runs],
            "profiles": [(p.name, p.ref or hashlib.sha256(json.dumps(p.document, sort_keys=True, default=str)
                                                           .encode()).hexdigest()) for p in inputs.profiles]}
    payload = json.dumps({"v": REPORT_VERSION, "t": _templates_digest(), "h": human, "r": refs},
                         sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


class BlobCache:
    """Rendered files in the blob store (local folder or S3), under ``rendered/incidents/``."""

    def __init__(self, blobs: Any, suffix: str = "pdf") -> None:
        self.blobs = blobs
        self.suffix = suffix

    def _key(self, key: str) -> str:
        return f"rendered/incidents/{key}.{self.suffix}"

    def get(self, key: str) -> bytes | None:
        return self.blobs.get_bytes(self._key(key)) if self.blobs.exists(self._key(key)) else None

    def put(self, key: str, data: bytes) -> None:
        self.blobs.put_bytes(self._key(key), data)


def cached_pdf(key: str, cache: Any, make: Callable[[], bytes]) -> tuple[bytes, bool]:
    """Serve the cached PDF for ``key`` or render it with ``make`` and keep it; returns (bytes, hit)."""
    data = cache.get(key)
    if data is not None:
        return data, True
    data = make()
    cache.put(key, data)
    return data, False
