"""The import lock: one writer per data folder.

An ``flock`` on ``import.lock``. The kernel releases it when the last process
holding the open file is gone, so it cannot outlive the run that took it: the
worker processes of a run inherit it (the lock is held until the last of them
exits) and die with their parent (see :mod:`rematch_trace.importing.pool`).
The file's text is only a hint for the message: the pid of the run's parent
and, on a second line, which command it is (``rematch import``, ``rematch
watch``), so whoever is refused learns who holds the folder and for how long.

The data folder itself is locked too (an ``flock`` on the directory, held
the same way): a cleanup that deletes ``import.lock`` under a running import
would otherwise let the next run lock a new file and write beside it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from rematch_trace.errors import RematchError

#: The holder a lock names when none is given.
IMPORT = "rematch import"
#: The holder ``rematch watch`` names: it keeps the lock for as long as it runs.
WATCH = "rematch watch"


class ImportLock:
    """An exclusive lock on a data folder, so two imports never interleave.

    ``holder`` names the command taking it, for the message of whoever is refused.
    """

    def __init__(self, path: Path, holder: str = IMPORT) -> None:
        self.path = path
        self.holder = holder
        self.fd = -1
        self.folder_fd = -1

    def __enter__(self) -> ImportLock:
        self.folder_fd = os.open(self.path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            fcntl.flock(self.folder_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.folder_fd)
            raise RematchError(refusal(self.path, _hint(self.path), removed=True)) from None
        try:
            self._lock_file()
        except BaseException:
            os.close(self.folder_fd)
            raise
        return self

    def _lock_file(self) -> None:
        while True:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                try:
                    text = os.read(self.fd, 128).decode(errors="replace")
                finally:
                    os.close(self.fd)
                raise RematchError(refusal(self.path, text)) from None
            # The lock is on the file we opened: if the name was removed or replaced
            # meanwhile (a cleanup deleting import.lock under a running import), a lock
            # on the old file would guard nothing; take it again on the file now there.
            try:
                same = os.path.samestat(os.fstat(self.fd), os.stat(self.path, follow_symlinks=False))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(self.fd)
        os.ftruncate(self.fd, 0)
        os.write(self.fd, f"{os.getpid()}\n{self.holder}\n".encode())

    def __exit__(self, *exc: object) -> None:
        # No LOCK_UN: that would release the lock for every process sharing the open
        # file, live workers included. Closing lets the kernel release it with the last.
        os.close(self.fd)
        os.close(self.folder_fd)


def _hint(path: Path) -> str:
    """The lock file's text, or "" when it cannot be read (removed, say)."""
    try:
        with open(path, "rb") as f:
            return f.read(128).decode(errors="replace")
    except OSError:
        return ""


def refusal(path: Path, text: str, removed: bool = False) -> str:
    """The one-line message for a lock held by the process ``text`` (the lock file's) names.

    ``removed``: the folder is held though its lock file could be taken (it was
    deleted under the run holding it); the file's text then names no one.
    """
    if removed and not text.strip():
        return (f"another rematch import or watcher is running on {path.parent} (it holds the folder; its lock "
                f"file {path} was removed while it ran); try again when it ends")
    first, _, rest = text.partition("\n")
    pid = first.strip() or "?"
    holder = rest.strip().splitlines()[0] if rest.strip() else IMPORT
    if holder == WATCH:
        # A watcher never ends on its own: waiting for it would be waiting forever.
        return (
            f"rematch watch (pid {pid}) holds {path.parent} (lock {path}): it imports every change of the "
            f"folders it watches as it is written; stop it (Ctrl-C, or kill {pid}) to run another import or "
            "watcher on this data folder"
        )
    who = f"pid {pid}" if _alive(pid) else f"a process of the run started by pid {pid}"
    return f"another rematch import is running on {path.parent} ({who} holds the lock {path}); try again when it ends"


def _alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True
