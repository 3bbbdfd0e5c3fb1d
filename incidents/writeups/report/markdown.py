"""Markdown the consultant types → HTML that is safe in a page and in a PDF.

Two layers: markdown-it renders with raw HTML turned off (``<script>`` stays text), then nh3 keeps
only a short list of tags and no attributes except link targets, so no ``<img>`` (no remote or local
image can be fetched), no ``style`` (no CSS ``url()``), no event handlers, and links only to
http(s) and mailto.
"""

from __future__ import annotations

from functools import lru_cache

import nh3
from markdown_it import MarkdownIt

ALLOWED_TAGS = {"p", "br", "hr", "em", "strong", "code", "pre", "blockquote", "ul", "ol", "li",
                "h3", "h4", "h5", "h6", "a", "table", "thead", "tbody", "tr", "th", "td", "del"}


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # "commonmark" with html off: raw HTML blocks and inline tags become escaped text.
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").enable("strikethrough")


def safe_html(text: str) -> str:
    """Sanitised HTML for one Markdown section (headings demoted under the report's own)."""
    html = _parser().render(text or "")
    html = (html.replace("<h1>", "<h3>").replace("</h1>", "</h3>")
            .replace("<h2>", "<h4>").replace("</h2>", "</h4>"))
    return nh3.clean(html, tags=ALLOWED_TAGS, attributes={"a": {"href"}},
                     url_schemes={"http", "https", "mailto"}, link_rel="noopener noreferrer nofollow",
                     strip_comments=True)
