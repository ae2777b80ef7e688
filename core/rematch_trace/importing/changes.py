"""Change detection: whether a file is unchanged, grown, or to be read whole.

A file is identified by its size and mtime; a file modified within
:data:`RACY_SECONDS` of its import is also checked by fingerprint (coarse
timestamps can hide a change). A grown file is continued only when the part
already imported is byte-for-byte what it was: its first and last bytes
before the old end are fingerprinted again, in the worker.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from rematch_trace.errors import RematchError
from rematch_trace.host.fs import read_spans

if TYPE_CHECKING:
    # Loaded where they are used: a rerun that finds every file unchanged needs neither.
    from rematch_trace.importing.outcome import Grown
    from rematch_trace.store.ledger import Ledger
    from rematch_trace.store.states import SavedState

HEAD_FP = 16 * 1024
TAIL_FP = 4096
#: A file modified within this many seconds of its import may have changed without its mtime showing it.
RACY_SECONDS = 2
#: The same, when the file's mtime has a fraction of a second and its import's time is known to the
#: microsecond: the file system keeps fine times (Linux's are a clock tick, a few milliseconds, apart).
RACY_FINE_SECONDS = 0.05


def racy(imported_at: float, mtime_ns: int) -> bool:
    """Whether a file whose stamp is unchanged may still have changed after its import read it: its last
    change is not clearly before the import's record. A whole-second mtime (a coarse file system) or a
    whole-second import time (a row written before the ledger kept fractions) keeps the wide window; else
    a write even a few hundredths of a second before the import is known to be the one it read (a tree
    copied just before its first import is not taken for changed on the next run)."""
    fine = mtime_ns % 1_000_000_000 != 0 and imported_at != int(imported_at)
    window = RACY_FINE_SECONDS if fine else RACY_SECONDS
    if fine:
        return imported_at - mtime_ns / 1e9 < window
    return abs(imported_at - mtime_ns / 1e9) < window

Plan = Literal["skip", "full", "grown"]


def fingerprints(path: str | os.PathLike[str], offset: int, skip: int = 0, head: str | None = None) -> tuple[str | None, str | None]:
    """sha256 of the first bytes after ``skip`` and of the last bytes before ``offset``.

    ``head``, when given, is the head fingerprint already known (not read again).
    """
    skip, tail_start = _starts(offset, skip)
    spans = [(tail_start, offset - tail_start)]
    if head is None:
        spans.append((skip, min(HEAD_FP, offset - skip)))
    try:
        parts = read_spans(path, spans)  # one open for both: this runs for every changed file
    except (OSError, RematchError):
        return None, None
    if head is None:
        head = _digest(parts[1])
    return head, _digest(parts[0])


def _starts(offset: int, skip: int) -> tuple[int, int]:
    """Where the head and the tail fingerprinted for ``offset`` start (the head after ``skip``)."""
    skip = min(max(0, skip), offset)
    return skip, max(skip, offset - TAIL_FP)


def _digest(data: bytes) -> str:
    """A fingerprint: the SHA-256 of ``data``, in hex."""
    import hashlib  # here: a rerun that finds nothing changed loads no OpenSSL

    return hashlib.sha256(data).hexdigest()


def stat_with_members(path: str, members: list[str]) -> tuple[int, int, bool]:
    """``stat_of`` of a source with members (``source_members``): the sizes of the path and of its
    member files added up, the newest modification time of all (a member folder counts by its
    time alone: a file added to it changes it). A member that does not exist counts for nothing, nor
    does an empty member file: SQLite makes an empty ``-wal`` when a reader opens a database (rematch's
    own reading of it included), which adds nothing to what it holds, and a write to it gives it bytes."""
    import stat as stat_mod

    from rematch_trace.host.fs import stat_of

    size, mtime_ns, regular = stat_of(path)
    for m in members:
        try:
            st = os.stat(m)
        except OSError:
            continue
        if stat_mod.S_ISREG(st.st_mode):
            if not st.st_size:
                continue
            size += st.st_size
        mtime_ns = max(mtime_ns, st.st_mtime_ns)
    return size, mtime_ns, regular


def plan(row: Any, path: str, size: int | None, mtime_ns: int, ledger: Ledger,
         members: bool = False) -> tuple[Plan, Grown | None]:
    """``skip``, ``full``, or ``grown`` (with what the worker needs to check and continue) for one file.

    ``row`` is the file's brief ledger row (or ``None``, see :meth:`Ledger.sources_brief`); its saved
    state is asked of ``ledger`` only in the rare cases it matters here. ``members``: the file is a
    source with members (``size`` and ``mtime_ns`` from :func:`stat_with_members`); a change of
    either is continued from the saved state (its offset is the plugin's cursor, no byte is
    fingerprinted), and a change within :data:`RACY_SECONDS` of the import is assumed.
    """
    if row is None or size is None:
        return "full", None
    if members:
        from rematch_trace.importing.outcome import Grown

        same = size == row["size"] and mtime_ns == row["mtime_ns"]
        if same and not racy(row["imported_at"], mtime_ns):
            return "skip", None
        if row["outcome"] in ("imported", "resumed"):
            return "grown", Grown(row["offset"] or 0)
        return "full", None
    if size == row["size"] and mtime_ns == row["mtime_ns"]:
        if not racy(row["imported_at"], mtime_ns):
            return "skip", None
        from rematch_trace.store.states import state_loads

        blob = ledger.saved_of(row["path"])
        state = state_loads(blob) if blob else {}
        # A document rewritten whole is fingerprinted whole (its offset is no byte offset).
        end = size if state.get("rewritten") else row["offset"] or size
        head, tail = fingerprints(path, end, 0 if state.get("rewritten") else state.get("head_skip", 0))
        if head == row["head_fp"] and tail == row["tail_fp"]:
            return "skip", None
        return "full", None
    offset = row["offset"] or 0
    # size == offset > the size recorded: the file grew while it was being read, and the
    # import read it to its end. Nothing is new, but only a continuation knows it cheaply.
    more = size > offset or (size == offset and size > row["size"])
    if row["outcome"] in ("imported", "resumed") and more and offset >= 0 and size >= row["size"]:
        from rematch_trace.importing.outcome import Grown

        # Whether the kept part is unchanged is checked in the worker, in parallel. Whether there
        # is a saved state to continue from is known when the file is handed out, from the query
        # that reads the state (a file without one is read whole): not asked here, a query more.
        return "grown", Grown(offset)
    return "full", None


#: Bytes past a grown file's old end read with its check (see :class:`Checked`).
AHEAD = 64 * 1024


class Checked(NamedTuple):
    """A grown file whose kept part was found unchanged: its saved state, and the bytes read for its tail
    check, from ``start`` on (the tail fingerprint's span and up to :data:`AHEAD` bytes past it)."""

    saved: SavedState
    start: int
    data: bytes

    def tail_fp(self, offset: int, skip: int) -> str | None:
        """The tail fingerprint of ``offset`` (as :func:`fingerprints` gives it) from the bytes read
        for the check, or ``None`` when they do not hold its whole span.

        Bytes read before the import, not after: were the file rewritten meanwhile, the
        fingerprint is of the bytes before, which the next run then finds changed (the file is
        read whole), where a fingerprint taken after the import may match bytes it did not read.
        """
        start = _starts(offset, skip)[1]
        if start < self.start or offset > self.start + len(self.data):
            return None
        return _digest(self.data[start - self.start:offset - self.start])


def resumable(path: str | os.PathLike[str], grown: Grown | None, size: int | None = None,
              members: bool = False) -> Checked | None:
    """The saved state to continue ``path`` from, if the part already imported is unchanged.

    ``size`` (the file's, as just found): the bytes past the old end, up to :data:`AHEAD`,
    are read with the tail, so that :meth:`Checked.tail_fp` gives the new end's fingerprint
    without reading the file again. A saved state this version cannot read (a damaged
    ledger) is none: the file is read whole. A source with ``members`` has no bytes to check:
    its saved state is continued as it is (the plugin raises ``RestartImport`` when it cannot).
    """
    if grown is None or not grown.saved:
        return None
    from rematch_trace.store.states import load_saved

    if members:
        try:
            return Checked(load_saved(grown.saved), 0, b"")
        except ValueError:
            return None

    try:
        saved = load_saved(grown.saved)
    except ValueError:
        return None
    if saved.rewritten:
        # Rewritten whole: no byte is where it was. The plugin checks its records (see Source.rewritten).
        return Checked(saved, 0, b"")
    offset = grown.offset
    skip, tail_start = _starts(offset, saved.head_skip)
    end = min(size, offset + AHEAD) if size is not None and size > offset else offset
    try:
        # One open for both: this runs for every grown file.
        tail, head = read_spans(path, [(tail_start, end - tail_start), (skip, min(HEAD_FP, offset - skip))])
    except (OSError, RematchError):
        return None
    if _digest(head) == grown.head_fp and _digest(tail[:offset - tail_start]) == grown.tail_fp:
        return Checked(saved, tail_start, tail)
    return None
