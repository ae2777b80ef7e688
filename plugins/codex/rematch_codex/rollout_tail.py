"""Reading the end of a live rollout: the lines of one turn or one call, as Codex has written them so far.

A Codex hook payload names the rollout (``transcript_path``) but not what the import reads from
it: the call as the model made it (``exec_command`` and its ``cmd``, where the payload says
``Bash`` and ``command``), the command's exit code, each response's token usage. The live hooks
read those lines here, from the file's end, in a window that grows until the turn's first line
(or the file's start) is in it. Bounded: at most :data:`MAX_SCAN_BYTES` are read, and only from a
regular file (a FIFO or a device named in a payload must not hang or flood a hook).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import orjson

from rematch_trace.host.files import open_regular

#: The first window read from the end; it doubles until the wanted line is in it.
FIRST_WINDOW = 256 * 1024
#: The most of a rollout one hook reads.
MAX_SCAN_BYTES = 64 * 1024 * 1024
#: The most of a rollout's end searched for one call's lines (a call is looked up as it happens: near the end).
CALL_SCAN_BYTES = 4 * 1024 * 1024
#: The most of a rollout's start read for its ``session_meta``.
HEAD_BYTES = 256 * 1024


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        line = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return line if type(line) is dict else None


def lines_with(path: str, needle: str | tuple[str, ...], first: Callable[[dict[str, Any]], bool],
               limit: int = MAX_SCAN_BYTES) -> list[dict[str, Any]]:
    """The rollout's lines that contain ``needle`` (any of them), oldest first, back to the one ``first`` accepts.

    The window grows from the end until a line ``first`` accepts is in it, or the file's start,
    or ``limit`` bytes (at most :data:`MAX_SCAN_BYTES`).
    """
    limit = min(limit, MAX_SCAN_BYTES)
    fd = open_regular(path)
    if fd is None or not needle:
        return []
    keys = [n.encode("utf-8", "replace") for n in ((needle,) if isinstance(needle, str) else needle)]
    try:
        size = os.fstat(fd).st_size
        window = FIRST_WINDOW
        while True:
            start = max(0, size - min(window, limit))
            chunk = os.pread(fd, size - start, start)
            raw_lines = chunk.split(b"\n")
            if start > 0:
                raw_lines = raw_lines[1:]  # the window's first line may be cut
            found = [x for x in (_parse(r) for r in raw_lines if any(k in r for k in keys)) if x is not None]
            if start == 0 or window >= limit or any(first(x) for x in found):
                return found
            window *= 2
    except OSError:
        return []
    finally:
        os.close(fd)


def session_meta(path: str) -> dict[str, Any]:
    """The rollout's first ``session_meta`` payload (``{}`` when there is none in its head)."""
    fd = open_regular(path)
    if fd is None:
        return {}
    try:
        head = os.pread(fd, HEAD_BYTES, 0)
    except OSError:
        return {}
    finally:
        os.close(fd)
    first = head.split(b"\n", 1)[0]
    line = _parse(first) if b'"session_meta"' in first else None
    payload = line.get("payload") if line is not None and line.get("type") == "session_meta" else None
    return payload if type(payload) is dict else {}


def wait_for(read: Callable[[], Any], ready: Callable[[Any], bool], wait_s: float, poll_s: float) -> Any:
    """``read()`` again every ``poll_s`` until ``ready`` accepts it, for at most ``wait_s``; the last read."""
    end = time.monotonic() + wait_s
    while True:
        found = read()
        if ready(found) or time.monotonic() >= end:
            return found
        time.sleep(poll_s)
