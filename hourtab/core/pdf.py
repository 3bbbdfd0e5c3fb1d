"""HTML → PDF with WeasyPrint, safely: the one renderer every HourTab PDF goes through.

WeasyPrint's default fetcher reads ``file://`` and network URLs and can attach local files to the
PDF, so anything a client or a run name smuggles into the HTML (``<img src=file:///etc/passwd>``,
``<link rel=attachment>``, a CSS ``url()``) would be fetched. ``SafeFetcher`` serves only
``data:`` URIs and files from the assets folder we ship, and refuses everything else by raising
``FatalURLFetchingError``, which stops the render instead of skipping the resource with a warning:
a document that tried to fetch something is a bug or an attack, never something to print.
"""

from __future__ import annotations

import base64
import datetime as dt
import mimetypes
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from hourtab.core.errors import HourTabError

ASSETS = Path(__file__).resolve().parents[1] / "assets"  # hourtab/assets: the fonts documents embed

#: Our own URL scheme for bundled assets (``hourtab-asset:fonts/DejaVuSans.ttf``): no other fetcher
#: understands it, so a document can never reach the assets through any other route, nor we theirs.
ASSET_SCHEME = "hourtab-asset"

BASE_CSS = f"""
@font-face {{ font-family: "DejaVu Sans"; font-weight: normal;
  src: url("{ASSET_SCHEME}:fonts/DejaVuSans.ttf"); }}
@font-face {{ font-family: "DejaVu Sans"; font-weight: bold;
  src: url("{ASSET_SCHEME}:fonts/DejaVuSans-Bold.ttf"); }}
html {{ font-family: "DejaVu Sans", "IPAGothic", sans-serif; font-size: 9.5pt; color: #1d2430; }}
@page {{ size: A4; margin: 18mm 16mm 20mm 16mm;
  @bottom-right {{ content: "Page " counter(page) " of " counter(pages); font-size: 8pt; color: #5d6778; }}
  @bottom-left {{ content: string(doctitle); font-size: 8pt; color: #5d6778; }} }}
h1 {{ string-set: doctitle content(); font-size: 16pt; margin: 0 0 4mm; }}
table {{ border-collapse: collapse; width: 100%; }}
th, td {{ text-align: left; padding: 1.2mm 1.5mm; border-bottom: 0.3mm solid #dde1e7; vertical-align: top; }}
td.num, th.num {{ text-align: right; }}
tr {{ break-inside: avoid; }}
thead {{ display: table-header-group; }}
"""


class PdfError(HourTabError):
    """A document could not be rendered (it asked for a resource, or WeasyPrint failed)."""


class RefusedURL(PdfError):
    """The document asked for a file or network resource; the render was stopped."""


# WeasyPrint takes over a second to import: it is imported where a PDF is rendered, not with this module.
def _fatal_error_class() -> type[Exception]:
    from weasyprint.urls import FatalURLFetchingError  # noqa: PLC0415 -- heavy, see above

    return FatalURLFetchingError


def _make_fetcher_class() -> type[Any]:
    from weasyprint.urls import URLFetcher, URLFetcherResponse  # noqa: PLC0415 -- heavy, see above

    class SafeFetcher(URLFetcher):
        """Serve ``data:`` URIs and bundled assets; stop the render on any other URL."""

        def __init__(self) -> None:
            super().__init__(allowed_protocols=("data", ASSET_SCHEME), allow_redirects=False)
            self.refused: list[str] = []

        def fetch(self, url: str, headers: Any = None) -> Any:
            scheme = url.split(":", 1)[0].lower() if ":" in url else ""
            if scheme == "data":
                mime, body = _decode_data_uri(url)
                return URLFetcherResponse(url, body, {"Content-Type": mime})
            if scheme == ASSET_SCHEME:
                path = _asset_path(url)
                if path is not None:
                    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
                    return URLFetcherResponse(url, path.read_bytes(), {"Content-Type": mime})
            self.refused.append(url)
            raise _refusal(url)

    return SafeFetcher


def _refusal(url: str) -> BaseException:
    return _fatal_error_class()(f"refused to fetch {url[:200]!r}")


def _asset_path(url: str) -> Path | None:
    """``hourtab-asset:fonts/x.ttf`` → the file, only if it is inside the assets folder."""
    rel = unquote(urlsplit(url).path).lstrip("/")
    candidate = (ASSETS / rel).resolve()
    if candidate.is_file() and ASSETS in candidate.parents:
        return candidate
    return None


def _decode_data_uri(url: str) -> tuple[str, bytes]:
    header, _, data = url[5:].partition(",")
    parts = header.split(";")
    mime = parts[0] or "text/plain"
    if "base64" in parts[1:]:
        return mime, base64.b64decode(data)
    return mime, unquote(data).encode("utf-8")


_FETCHER_CLASS: type[Any] | None = None


def safe_fetcher() -> Any:
    """A fresh fetcher instance (it records what it refused)."""
    global _FETCHER_CLASS
    if _FETCHER_CLASS is None:
        _FETCHER_CLASS = _make_fetcher_class()
    return _FETCHER_CLASS()


@dataclass(frozen=True)
class PdfMeta:
    title: str
    author: str
    created: dt.datetime


def meta_tags(meta: PdfMeta) -> str:
    """``<title>`` and ``<meta>`` tags WeasyPrint turns into the PDF's Title, Author and dates."""
    stamp = meta.created.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return (f"<title>{escape(meta.title)}</title>"
            f'<meta name="author" content="{escape(meta.author)}">'
            f'<meta name="dcterms.created" content="{stamp}">'
            f'<meta name="dcterms.modified" content="{stamp}">'
            '<meta name="generator" content="HourTab">')


def render_pdf(html: str, extra_css: str = "") -> bytes:
    """Render escaped HTML to PDF bytes with the safe fetcher, the bundled font and page numbers.

    ``html`` must already carry its metadata (see ``meta_tags``) and escape all user text; the
    fetcher is the second line of defence, not the first.
    """
    from weasyprint import CSS, HTML  # noqa: PLC0415 -- heavy, see _fatal_error_class

    fetcher = safe_fetcher()
    try:
        document = HTML(string=html, base_url=f"{ASSET_SCHEME}:/", url_fetcher=fetcher)
        stylesheets = [CSS(string=BASE_CSS + extra_css, base_url=f"{ASSET_SCHEME}:/", url_fetcher=fetcher)]
        return document.write_pdf(stylesheets=stylesheets)
    except _fatal_error_class() as e:
        raise RefusedURL(f"The document asked for an external resource and was not rendered ({e}).") from e
