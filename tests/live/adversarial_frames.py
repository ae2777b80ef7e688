"""Adversarial IPC frames (issue 29), shared by the codec's linearity tests and ``bench/ipc.py``.

Each named shape is a prefix, then a unit an adversary repeats to the size wanted; ``ATOMS`` are the
pieces Hypothesis combines into units of its own.
"""

from __future__ import annotations

#: Pieces an adversary repeats: escapes, quotes, backslashes, surrogates, brackets, long runs.
ATOMS: list[bytes] = [
    b'"', b"\\", b'"\\', b'\\"', b"\\\\", b"\\u", b"\\ud800", b"\\udc00", b'"\\ud800"', b"[", b"]", b"{", b"}",
    b'{"a":', b'"a":', b",", b":", b'"x"', b"a" * 64, b"\x01", b"\xc3\xa9", b"\xf0\x9f\x98\x80", b"1", b"1e400",
    b"0.1", b" ", b"\n", b"null", b'"\\u0061"',
]
#: Named generators (a prefix, then a unit repeated): the shapes issue 29 lists, and two more.
NAMED: dict[str, tuple[bytes, bytes]] = {
    "quote_backslash": (b"", b'"\\'),
    "quotes": (b"", b'"'),
    "backslashes": (b"", b"\\"),
    "escaped_quotes": (b"", b'\\"'),
    "open_string_escapes": (b'{"a":"', b'\\"'),
    "surrogates": (b"[", b'"\\ud800",'),
    "empty_strings": (b"[", b'"",'),
    "deep_nesting": (b"", b"[{"),
    "brackets": (b"[", b"[],"),
    "long_strings": (b"[", b'"' + b"x" * 4000 + b'",'),
    "mixed": (b'{"k":[', b'"\\u00e9\\"",{"a":"\\\\"},'),
}


def payload(prefix: bytes, unit: bytes, size: int) -> bytes:
    """``prefix`` then whole copies of ``unit``, at most ``size`` bytes (at least one copy)."""
    return prefix + unit * max(1, (size - len(prefix)) // len(unit))
