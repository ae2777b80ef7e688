"""Text helpers for plugins and the core: lone surrogates, UTF-8 sizes.

JSON escapes can spell lone surrogates (``"\\ud800"``), which have no UTF-8
form: a trace, a saved state or the ledger cannot hold them as they are.
"""

from __future__ import annotations


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
