"""The data folder: where outputs go, private, written atomically, never outside."""

from __future__ import annotations

import atexit
import os
import queue
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from rematch_trace.store.location import data_dir as data_dir  # re-exported: callers import it from here

_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")

#: What a trace file name (the ledger's ``trace_path``, inside ``traces/``) may look like: a safe name.
_KEY = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9._-]{0,127}|_[0-9a-f]{40})(?:~\d+)?")


def safe_name(session_id: str) -> str:
    """A file name for a session id that cannot leave its folder.

    A plain id (letters, digits, ``.``, ``_``, ``-``; not starting with a dot;
    at most 128 characters) is used as it is. Anything else is encoded as ``_``
    and a digest, which no plain id can equal.
    """
    if _SAFE_ID.fullmatch(session_id) and not session_id.endswith("."):
        return session_id
    import hashlib  # rare (a plain id needs none), and OpenSSL's start-up is not free

    return "_" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def key_of(row: Mapping[str, Any]) -> str | None:
    """The name a session's outputs go by (its trace file's stem), or ``None`` if the row's path is not safe."""
    path = row.get("trace_path")
    if not isinstance(path, str):
        return None
    # String operations, not pathlib: this runs for every session on every run.
    folder, _, name = path.rpartition("/")
    stem = name[:-6] if name.endswith(".jsonl") else ""
    if folder.rpartition("/")[2] != "traces" or not _KEY.fullmatch(stem):
        return None
    return stem


def random_hex(nbytes: int) -> str:
    """A random hex token of ``nbytes`` bytes: what :func:`secrets.token_hex` gives, without
    importing :mod:`secrets` (and :mod:`random`, :mod:`hmac`) into every command."""
    return os.urandom(nbytes).hex()


class DataDir:
    """The layout of a data folder: ``traces/``, ``events/``, ``pending/``, ``journal/``, the ledger."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.traces = root / "traces"
        self.events = root / "events"
        self.pending = root / "pending"
        self.journal = root / "journal"
        self.ledger = root / "ledger.sqlite"
        self.lock = root / "import.lock"
        #: Held a moment while a session's outputs are replaced (see :mod:`rematch_trace.store.claims`).
        self.claims_lock = root / "claims.lock"
        #: The root as text, and what every path inside it starts with: a continued file looks
        #: up a few paths each, cheaper joined and cut as strings than made as path objects.
        self.root_text = os.fspath(root)
        self._inside = self.root_text.rstrip(os.sep) + os.sep

    def ensure(self) -> None:
        """Create the folders, private to the user (0700)."""
        for d in (self.root, self.traces, self.events, self.pending, self.journal):
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
            if d.is_symlink():
                raise OSError(f"{d} is a symbolic link; refusing to write through it")
            os.chmod(d, 0o700)

    def trace_path(self, session_id: str) -> Path:
        """``traces/<session_id>.jsonl`` (the id made safe)."""
        return self.traces / f"{safe_name(session_id)}.jsonl"

    def events_path(self, session_id: str) -> Path:
        """``events/<session_id>.jsonl`` (the id made safe)."""
        return self.events / f"{safe_name(session_id)}.jsonl"

    def trace_file(self, session_id: str) -> str:
        """:meth:`trace_path` as a string."""
        return f"{self._inside}traces{os.sep}{safe_name(session_id)}.jsonl"

    def relative(self, path: Path | str) -> str:
        """``path``, inside the data folder, relative to it (``traces/<id>.jsonl``), as the ledger
        and the journal name outputs."""
        text = os.fspath(path)
        if text.startswith(self._inside):
            return text[len(self._inside):]
        return Path(path).relative_to(self.root).as_posix()

    def pending_path(self, session_id: str) -> Path:
        """``pending/<session_id>.json`` (the id made safe)."""
        return self.pending / f"{safe_name(session_id)}.json"


class AtomicFile:
    """A file written beside its target and renamed over it only when complete."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.tmp = target.with_name(f".{target.name}.{random_hex(6)}.tmp")
        fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        self.f: IO[bytes] = os.fdopen(fd, "wb", buffering=256 * 1024)
        self.size = 0
        #: The committed file's identity, see :func:`stamp_of`.
        self.stamp: tuple[int, int, int] | None = None

    def write(self, data: bytes) -> None:
        """Append bytes."""
        self.f.write(data)
        self.size += len(data)

    def flush(self) -> None:
        """Hand the buffered bytes to the kernel."""
        self.f.flush()

    def commit(self, fsync: bool = False) -> None:
        """Close and move into place (atomic on one file system).

        The replaced file is first linked to a trash name and unlinked later, off
        the critical path: freeing a large file's blocks inside the rename costs
        more than writing it did. The target always exists, old or new.
        """
        self.f.flush()
        if fsync:
            os.fsync(self.f.fileno())
        self.stamp = stamp_of(os.fstat(self.f.fileno()))
        self.f.close()
        trash: Path | None = self.target.with_name(f".{self.target.name}.{random_hex(6)}.trash")
        try:
            os.link(self.target, trash, follow_symlinks=False)  # type: ignore[arg-type]
        except OSError:
            trash = None  # no old file (or no hard links here): a plain replace
        os.replace(self.tmp, self.target)
        if trash is not None:
            reaper.discard(trash)

    def discard(self) -> None:
        """Close and remove the temporary file; the target stays as it was."""
        try:
            self.f.close()
        finally:
            try:
                os.unlink(self.tmp)
            except FileNotFoundError:
                pass


def stamp_of(st: os.stat_result) -> tuple[int, int, int]:
    """A file's identity as the ledger writer checks it: inode, size, mtime.

    The import of one source stamps each trace it commits; the ledger writer
    records the session only if the trace there still bears that stamp (another
    file's copy of the session may have replaced it since).
    """
    return st.st_ino, st.st_size, st.st_mtime_ns


def write_atomic(target: Path, data: bytes, fsync: bool = False) -> None:
    """Write a whole small file atomically (0600): beside its target, then renamed over it.

    Written with one ``write``, without :class:`AtomicFile`'s buffered file object
    and its trash name for the replaced file: a small file's blocks are freed at
    once by the rename, and a rerun rewrites the pending file of every continued
    session whose flags moved (a buffer, a link and a queued unlink each).
    """
    tmp = f"{target.parent}{os.sep}.{target.name}.{random_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


class Reaper:
    """Unlinks replaced files in one background thread (``unlink`` releases the GIL)."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Path] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def discard(self, path: Path) -> None:
        """Unlink ``path`` soon."""
        if self._pid != os.getpid():  # a forked worker: the parent's thread is not here
            self.__init__()  # type: ignore[misc]
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="rematch-reaper", daemon=True)
            self._thread.start()
            # A daemon thread dies with the interpreter: a command that never drains (the report,
            # say) would otherwise leave its last replaced files behind when it exits first.
            atexit.register(self.drain)
        self._queue.put(path)

    def _run(self) -> None:
        while True:
            path = self._queue.get()
            try:
                os.unlink(path)
            except OSError:
                pass  # left for clean_temporaries
            finally:
                self._queue.task_done()

    def drain(self) -> None:
        """Wait until every queued file is gone."""
        if self._thread is not None and self._pid == os.getpid():
            self._queue.join()


#: The process's reaper.
reaper = Reaper()


def clean_temporaries(folder: Path) -> int:
    """Remove temporary and replaced files a killed import left behind; return how many."""
    n = 0
    try:
        # One listing for both kinds (``.*.tmp`` and ``.*.trash``): every run sweeps three folders.
        with os.scandir(folder) as entries:
            names = [e.name for e in entries if e.name.startswith(".") and _LEFT_BEHIND.fullmatch(e.name)]
    except OSError:
        return 0
    for name in names:
        try:
            os.unlink(os.path.join(folder, name))
            n += 1
        except OSError:
            pass
    return n


#: What a killed import leaves: ``.NAME.tmp`` (a temporary) and ``.NAME.trash`` (a replaced file).
_LEFT_BEHIND = re.compile(r"\..*\.(?:tmp|trash)", re.DOTALL)
