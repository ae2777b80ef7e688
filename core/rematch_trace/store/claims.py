"""Two files, one session id: a copy that holds less never replaces a trace that holds more.

A backup copy of a transcript, or a subagent id several files claim, names a
session whose trace already exists. The workers write traces themselves (the
ledger writer only records them), so the decision is made where the trace is
replaced: in the worker, under a short lock on the data folder
(``claims.lock``), so two workers committing one session decide one after
the other. A session's trace, events and pending files are replaced together
under it.

The rule, for a session whose trace already exists:

- the source's own trace from an earlier run (the ledger attributes the
  session to it, and the file predates this run) is replaced: a transcript
  that shrank says so itself;
- otherwise (another file's copy, from an earlier run or from this one) the
  copy with more trace records wins, then the longer trace, then (two copies
  of one size) the greater trace bytes, then the greater events bytes: a total
  order on the outputs, so which copy stays never depends on which worker
  committed last. Identical copies replace each other, so a retried file (a
  killed worker's) rewrites its own identical copy.

What the ledger knows travels with the work item (the session ids it
attributes to the file), so a worker never opens the ledger. When this run
started is the import lock's mtime, set by each run (a watcher holds the lock
across many: each of its imports touches it).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Sequence
from pathlib import Path

import attrs
import orjson

from rematch_trace.store.datafolder import AtomicFile, DataDir

#: The tail of a trace read to find its last record's seq (a trace ends with a short record).
TAIL_BYTES = 64 * 1024
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


@attrs.frozen(slots=True)
class Conflict:
    """A session a file offered whose trace another file's copy had: what was kept, and how much each held."""

    session_id: str
    #: ``"mine"``: this file's copy replaced the other; ``"theirs"``: the other was kept.
    kept: str
    mine: int
    theirs: int


def records_in(path: Path, size: int) -> int:
    """How many records the trace at ``path`` holds (its last record's seq + 1; -1 if unreadable)."""
    try:
        with open(path, "rb") as f:
            start = max(0, size - TAIL_BYTES)
            f.seek(start)
            tail = f.read(size - start)
    except OSError:
        return -1
    for line in reversed(tail.rstrip(b"\n").split(b"\n")):
        try:
            seq = orjson.loads(line).get("seq")
        except (orjson.JSONDecodeError, AttributeError):
            continue
        if type(seq) is int:
            return seq + 1
    return -1


#: Bytes read at a time when two copies of one size are compared.
COMPARE_CHUNK = 1 << 20


def compare_files(mine: Path, theirs: Path) -> int:
    """-1, 0 or 1 as the bytes of ``mine`` sort before, equal or after those of ``theirs``.

    Read a chunk at a time from both (memory stays bounded); a file that cannot
    be read sorts first, so a readable copy replaces it.
    """
    with contextlib.ExitStack() as stack:
        try:
            a = stack.enter_context(open(mine, "rb"))
        except OSError:
            return -1
        try:
            b = stack.enter_context(open(theirs, "rb"))
        except OSError:
            return 1
        while True:
            x, y = a.read(COMPARE_CHUNK), b.read(COMPARE_CHUNK)
            if x != y:
                return 1 if x > y else -1
            if not x:
                return 0


class Claims:
    """The decisions of one source's import about sessions whose traces already exist."""

    def __init__(self, data: DataDir, owned: frozenset[str] | set[str] | tuple[str, ...] = ()) -> None:
        self.data = data
        self.owned = frozenset(owned)
        self.conflicts: list[Conflict] = []
        self._started: int | None = None
        self._fd = -1

    def held(self) -> Claims:
        """Hold the data folder's claims lock, as a context manager (released even if the commit fails)."""
        return self  # (itself, not a generator-made manager: entered for every session a rerun continues)

    def __enter__(self) -> None:
        if self._fd < 0:
            self._fd = os.open(self.data.claims_lock, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Close the lock file, if this import opened it."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _run_started(self) -> int:
        if self._started is None:
            try:
                self._started = os.stat(self.data.lock).st_mtime_ns
            except OSError:
                self._started = 0  # no run lock (a direct import): every existing file predates it
        return self._started

    def may_write(self, session_id: str, records: int, size: int, copies: Sequence[AtomicFile] = ()) -> bool:
        """Whether this source's copy of ``session_id`` (``records`` records, ``size`` bytes) may replace
        the trace there now. Call while :meth:`held`; conflicts are noted in :attr:`conflicts`.

        ``copies`` are this copy's files not yet committed (trace first, then events): each is
        compared, in order, with the file it would replace when the two traces tie on records
        and size (flushed first; only then, as a tie is rare).
        """
        target = self.data.trace_path(session_id)
        try:
            st = os.stat(target)
        except FileNotFoundError:
            return True
        if session_id in self.owned and st.st_mtime_ns < self._run_started():
            return True
        theirs = records_in(target, st.st_size)
        mine_wins = (records, size) >= (theirs, st.st_size)
        if (records, size) == (theirs, st.st_size):
            for mine in copies:
                mine.flush()
                order = compare_files(mine.tmp, mine.target)
                if order:
                    mine_wins = order > 0
                    break
        self.conflicts.append(Conflict(session_id, "mine" if mine_wins else "theirs", records, theirs))
        return mine_wins


    def may_continue(self, session_id: str) -> bool:
        """Whether the ledger gives the trace of ``session_id`` to this source, so an import may
        continue it in place. Call while :meth:`held`.

        Not also "written before this run": a retried continuation (its worker was killed
        writing in place) must continue its own trace. Limit: another file's copy that
        replaced the trace earlier in this same run is not told apart (see the decisions).
        """
        return session_id in self.owned and os.path.exists(self.data.trace_file(session_id))


__all__ = ["Claims", "Conflict", "records_in"]
