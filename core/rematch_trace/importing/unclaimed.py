"""Why no plugin claimed a file: said in words a user can act on, from its first bytes.

"No plugin recognises this file" alone leaves a user guessing whether they
named the wrong file or lack a plugin; the file's first bytes say which.
"""

from __future__ import annotations

import orjson

_GZIP = b"\x1f\x8b"
_ZSTD = b"\x28\xb5\x2f\xfd"
#: What every reason ends with: where to see what the installed plugins read.
_SEE = "see: rematch plugins"


def reason_of(head: bytes) -> str:
    """The reason a file no plugin claimed, and that starts with ``head`` (its first 4 KiB), was skipped."""
    if not head.strip():
        return "empty file, not a transcript"
    if head.startswith((_GZIP, _ZSTD)):
        return f"a compressed file that no installed plugin reads as a transcript ({_SEE})"
    if b"\0" in head:
        return "a binary file, not a JSONL transcript"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as err:
        if err.start < len(head) - 3:  # not merely a character cut by the 4 KiB limit
            return "a binary file (not UTF-8 text), not a JSONL transcript"
        text = head[: err.start].decode("utf-8")
    lines = text.lstrip("\ufeff").splitlines()
    first = next((line for line in lines if line.strip()), "")
    complete = len(lines) > 1 or head.endswith(b"\n")
    try:
        value = orjson.loads(first)
    except orjson.JSONDecodeError:
        if not complete:
            return f"a text file whose first line is not JSON (or longer than 4 KiB) ({_SEE})"
        return "a text file, not JSON lines: its first line is not JSON"
    if not isinstance(value, dict):
        return f"JSON, but its first line is not an object as transcript records are ({_SEE})"
    return f"JSON lines that no installed plugin recognises as a transcript ({_SEE})"


__all__ = ["reason_of"]
