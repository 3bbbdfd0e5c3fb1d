"""Text as we accept it from people and files: without the characters XML 1.0 forbids.

Names, descriptions and run names end up in the Atom feed, in HTML, in PDFs and in JSON. XML 1.0
cannot carry C0 control characters (other than tab, newline and carriage return), U+FFFE, U+FFFF
or lone surrogates at all, not even escaped, so one such character in a retainer name would make
the client's feed unreadable. They carry no meaning in a name, so they are removed on input, once,
rather than escaped on every way out.
"""

from __future__ import annotations

import re

#: What XML 1.0's ``Char`` production excludes, as a Python pattern.
XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
#: The same set for pyarrow's RE2 (UTF-8 text cannot hold surrogates).
XML_FORBIDDEN_RE2 = r"[\x{0}-\x{8}\x{B}\x{C}\x{E}-\x{1F}\x{FFFE}\x{FFFF}]"


def xml_safe(text: str | None) -> str:
    """``text`` without the characters XML 1.0 forbids (``None`` becomes ``""``)."""
    return XML_FORBIDDEN.sub("", text or "")

