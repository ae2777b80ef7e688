"""The import lock: one writer per data folder.

An ``flock`` on ``import.lock``. The kernel releases it when the last process
holding the open file is gone, so it cannot outlive the run that took it: the
worker processes of a run inherit it (the lock is held until the last of them
exits) and die with their parent (see :mod:`rematch_trace.importing.pool`).
The file's text is only a hint for the message: the pid of the run's parent.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from rematch_trace.errors import RematchError


class ImportLock:
    """An exclusive lock on a data folder, so two imports never interleave."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> ImportLock:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = os.read(self.fd, 32).decode(errors="replace").strip() or "?"
            finally:
                os.close(self.fd)
            alive = _alive(holder)
            who = f"pid {holder}" if alive else f"a process of the run started by pid {holder}"
            raise RematchError(
                f"another rematch import is running on {self.path.parent} ({who} holds the lock {self.path}); "
                "try again when it ends"
            ) from None
        os.ftruncate(self.fd, 0)
        os.write(self.fd, str(os.getpid()).encode())
        return self

    def __exit__(self, *exc: object) -> None:
        # No LOCK_UN: that would release the lock for every process sharing the open
        # file, live workers included. Closing lets the kernel release it with the last.
        os.close(self.fd)


def _alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True
