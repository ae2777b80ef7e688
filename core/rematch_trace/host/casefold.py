"""Text lowered for finding ASCII words in it, one character for one: the rules' anchors and the prelabels.

The security rules (``security/scan.py``) find their anchors, and the trace's prelabels
(``trace/prelabel.py``) their words, in text lowered here; both rooms need it, so it sits in the host's.
"""

from __future__ import annotations

# The characters outside ASCII that a case-insensitive pattern matches with an
# ASCII letter (Python's re folds these four), and the letter: the anchors are
# found in text lowered with these folded first, so that no match is missed.
# (tests/security/test_security_scan.py checks the list against every code point.)
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
#: Those four characters: in text holding none of them, a case-insensitive match of ASCII
#: letters is found in ``text.lower()`` as the lower-case letters themselves.
FOLDED = "\u0130\u0131\u017f\u212a"


def lowered(text: str) -> str:
    """``text`` lower-cased for anchor finding: one character for one, positions kept."""
    if text.isascii():
        return text.lower()
    # translate() looks every character up (slow past ASCII): only when there is one to fold.
    return text.translate(_FOLD).lower() if holds_folded(text) else text.lower()


def holds_folded(text: str) -> bool:
    """Whether ``text`` holds one of :data:`FOLDED`'s characters."""
    for c in FOLDED:  # noqa: SIM110 - a plain loop: no generator to set up per call
        if c in text:
            return True
    return False


def ascii_lowered(text: str) -> str:
    """``text.lower()`` with every character past ASCII as ``?``: where to find lower-case ASCII words.

    An ASCII word without ``?`` occurs in it exactly where it occurs in ``text.lower()``.
    Lowering past ASCII looks every character up, but only two characters past ASCII
    lower to ASCII letters (the Kelvin sign and the dotted capital I, which also lowers
    to two characters): in text without them, the characters past ASCII are made ``?``
    first (one C pass) and the rest lowered as ASCII.
    """
    if text.isascii():
        return text.lower()
    if "\u212a" in text or "\u0130" in text:
        return text.lower().encode("ascii", "replace").decode("ascii")
    return text.encode("ascii", "replace").decode("ascii").lower()


__all__ = ["FOLDED", "ascii_lowered", "holds_folded", "lowered"]
