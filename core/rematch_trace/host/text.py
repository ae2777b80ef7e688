"""Text helpers for plugins and the core: lone surrogates, UTF-8 sizes, text safe to print.

JSON escapes can spell lone surrogates (``"\\ud800"``), which have no UTF-8
form: a trace, a saved state or the ledger cannot hold them as they are.
"""

from __future__ import annotations

import re
from typing import Any

#: The characters shown as escapes, whatever shows them (a page, a terminal): C0/C1 controls (not tab or
#: newline), the soft hyphen, bidi controls (marks, embeddings, overrides, isolates), zero-width and
#: invisible characters (joiners, word joiner, invisible operators, the Mongolian vowel separator, the
#: Hangul fillers, the BOM), the line and paragraph separators, interlinear annotation marks, lone
#: surrogates (which cannot even be encoded) and the tag characters (U+E0000-E007F, invisible text).
HIDDEN_CLASS = ("\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u061c\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e"
                "\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f")
#: The same, with tab and newline: what a one-line text (a path, a message) shows as escapes.
_HIDDEN_LINE = re.compile(f"[{HIDDEN_CLASS}\t\n]")


def escape_char(ch: str) -> str:
    """The one spelling of a hidden character: ``\\uXXXX``, or ``\\UXXXXXXXX`` past the BMP."""
    n = ord(ch)
    return f"\\u{n:04x}" if n <= 0xFFFF else f"\\U{n:08x}"


def clean(text: str) -> str:
    """``text`` that encodes as UTF-8: each lone surrogate becomes U+FFFD."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def utf8_len(text: str) -> int:
    """The size of ``text`` in UTF-8 bytes (a lone surrogate counts 3, as it would be escaped)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def printable(text: str) -> str:
    """``text`` with the lone surrogates of undecodable file names spelled as backslash escapes."""
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")


def one_line(value: Any) -> str:
    """``value`` as one line of terminal text: every hidden character, tab and newline escaped
    (:func:`escape_char`), so a file name or message cannot move the cursor, clear the screen, forge a
    line or reorder what follows it."""
    text = value if isinstance(value, str) else str(value)
    if text.isascii() and text.isprintable():
        return text  # the usual case: nothing to look for
    return _HIDDEN_LINE.sub(lambda m: escape_char(m.group()), text)
