"""File helpers a plugin's live translation may use: opening a harness's file without letting it hang a hook.

A live hook reads the harness's transcript or rollout named in a payload, a path the agent can
influence: it may name a FIFO (an ``open`` that never returns) or a device. Plugins open such paths
through :func:`open_regular` only.
"""

from __future__ import annotations

import os
import stat


def open_regular(path: str) -> int | None:
    """A read-only descriptor of ``path`` when it is a regular file, else ``None`` (a FIFO must not hang
    a hook: the open does not block, and anything but a regular file is closed again). The caller closes it."""
    if not path:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None
