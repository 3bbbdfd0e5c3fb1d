"""The shared PDF renderer: bundled font, page numbers, metadata, and it fetches nothing outside."""

from __future__ import annotations

import datetime as dt
import http.server
import subprocess
import threading

import pytest

from hourtab.core.pdf import ASSET_SCHEME, PdfMeta, RefusedURL, meta_tags, render_pdf, safe_fetcher

META = meta_tags(PdfMeta("Statement <Nov>", "Ada & Co", dt.datetime(2025, 11, 30, 12, tzinfo=dt.UTC)))


def _doc(body: str) -> str:
    return f"<!doctype html><html><head>{META}</head><body><h1>Doc</h1>{body}</body></html>"


def _pdftotext(pdf: bytes, tmp_path) -> str:
    path = tmp_path / "doc.pdf"
    path.write_bytes(pdf)
    return subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout


def test_metadata_font_and_page_numbers(tmp_path):
    rows = "".join(f"<p>line {i}</p>" for i in range(75))
    pdf = render_pdf(_doc(rows))
    path = tmp_path / "doc.pdf"
    path.write_bytes(pdf)
    info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True, check=True).stdout
    assert "Title:           Statement <Nov>" in info and "Author:          Ada & Co" in info
    assert "CreationDate:" in info and "Nov 30 12:00:00 2025" in info
    pages = int(next(line.split()[-1] for line in info.splitlines() if line.startswith("Pages:")))
    assert pages >= 2
    text = _pdftotext(pdf, tmp_path)
    assert f"Page 1 of {pages}" in text and f"Page {pages} of {pages}" in text
    fonts = subprocess.run(["pdffonts", str(path)], capture_output=True, text=True, check=True).stdout
    assert "DejaVu-Sans" in fonts


def test_bundled_font_is_served_from_assets_only():
    fetcher = safe_fetcher()
    response = fetcher.fetch(f"{ASSET_SCHEME}:fonts/DejaVuSans.ttf")
    assert response.read(4) == b"\x00\x01\x00\x00"  # a TrueType file
    from weasyprint.urls import FatalURLFetchingError

    for url in (f"{ASSET_SCHEME}:../pdf.py", f"{ASSET_SCHEME}:%2e%2e/pdf.py", f"{ASSET_SCHEME}:/etc/passwd"):
        with pytest.raises(FatalURLFetchingError):
            fetcher.fetch(url)


@pytest.fixture
def http_server():
    """A real local HTTP server that records every request it gets."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", hits
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("body", [
    '<img src="file:///etc/passwd">',
    '<link rel="attachment" href="file:///etc/hostname">',
    '<style>body { background: url("file:///etc/hostname") }</style>',
    '<img src="/etc/passwd">',
    '<object data="file:///etc/passwd"></object>',
])
def test_file_urls_stop_the_render(body):
    with pytest.raises(RefusedURL, match="external resource"):
        render_pdf(_doc(body))


def test_network_urls_are_never_requested(http_server):
    base, hits = http_server
    for body in (f'<img src="{base}/img.png">', f'<style>@import url("{base}/x.css");</style>',
                 f'<a href="{base}/link">link</a><link rel="stylesheet" href="{base}/s.css">'):
        try:
            render_pdf(_doc(body))
        except RefusedURL:
            pass
    assert hits == []


def test_data_uri_is_allowed():
    pixel = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8"
             "z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
    assert render_pdf(_doc(f'<img src="{pixel}">')).startswith(b"%PDF")
