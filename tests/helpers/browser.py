"""The browser tests' Chromium and what every page is checked against."""

from __future__ import annotations

import os

#: Debian's Chromium (``scripts/install.sh --test``), driven by Playwright without a browser download.
CHROMIUM = os.environ.get("HOURTAB_CHROMIUM", "/usr/bin/chromium")

#: What axe-core checks every page against: WCAG 2.0 and 2.1, levels A and AA.
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]

#: The innermost elements that reach past the right edge of the screen (to name them when a page overflows).
WIDE = """(width) => [...document.querySelectorAll('body *')]
  .filter(e => e.getBoundingClientRect().right > width + 1
          && ![...e.children].some(c => c.getBoundingClientRect().right > width + 1))
  .slice(0, 4).map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className && e.className.baseVal === undefined ? '.' + e.className : '')
                   + ' ' + Math.round(e.getBoundingClientRect().right) + 'px')"""
