"""Continuing outputs in place, undoably: the rollback journal of resumed imports.

A first import writes each trace beside its target and renames it over when
complete. A resumed import (a transcript that grew) must not pay for copying
every kept byte again, so it continues the existing files in place instead:

1. Before any byte changes, a journal entry is written atomically to
   ``journal/``: for each file, the length kept and the bytes past it (the
   final records that the resumed run rewrites), plus a generation token.
2. The files are truncated to their kept length and the new records appended.
3. The batch records the source in the ledger with the token in its saved
   state; that commit is the commit of the whole resume. Then the entry is
   removed.

Recovery (:func:`recover`, run under the import lock before any import and by
the reading commands) looks at each entry left behind by a crash: if the
ledger holds its token, the resume had committed and the entry is dropped;
otherwise every file is put back as it was (truncated to its kept length, the
saved bytes written back). Either way the outputs are the old ones or the new
ones, never half, as SQLite's own rollback journal guarantees for its pages.
"""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from rematch_trace.errors import RestartImport
from rematch_trace.store.datafolder import DataDir, random_hex, stamp_of

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class AppendFile:
    """An existing output continued in place past its first ``keep`` bytes.

    Opening reads the bytes past ``keep`` (the undo information) and changes
    nothing; :meth:`begin` starts writing at ``keep`` once the journal holds
    those bytes. The new bytes overwrite the old ones and the file is cut only
    if it ends up shorter (seldom: a grown transcript adds records), because
    cutting a file costs a file-system transaction of its own.

    Written bytes are gathered and handed to the kernel with ``pwrite`` (at
    :meth:`commit`, or each time :data:`GATHER` bytes are waiting): a continued
    file mostly adds a few records, and a buffered file object for them (opened,
    positioned, flushed and closed for each of a rerun's outputs) costs more than
    the records.
    """

    #: Bytes gathered before they are handed to the kernel.
    GATHER = 256 * 1024

    def __init__(self, target: Path, keep: int) -> None:
        self.target = target
        self.keep = keep
        try:
            fd = os.open(target, os.O_RDWR | _NOFOLLOW)
        except OSError:
            raise RestartImport(f"{target} is gone") from None
        try:
            end = os.fstat(fd).st_size
            if end < keep:
                raise RestartImport(f"{target} is shorter than recorded")
            self.tail = os.pread(fd, end - keep, keep) if end > keep else b""
            self.end = end
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self._open = True
        self._begun = False
        #: Bytes written and not yet handed to the kernel, and where they go.
        self._chunks: list[bytes] = []
        self._gathered = 0
        self._at = keep
        self.size = keep
        #: The committed file's identity (see :func:`~rematch_trace.store.datafolder.stamp_of`).
        self.stamp: tuple[int, int, int] | None = None

    def keep_more(self, n: int) -> None:
        """Keep the first ``n`` bytes past the kept length too, before anything is written.

        For bytes the continuation would write again unchanged (the held run's
        lines, see ``Synthesizer.keep_held``): they are neither written nor part
        of the undo information.
        """
        assert not self._begun and 0 <= n <= len(self.tail), "keep_more() before begin(), within the tail"
        self.keep += n
        self.tail = self.tail[n:]
        self._at = self.size = self.keep

    def begin(self) -> None:
        """Start writing at the kept length."""
        self._begun = True

    def write(self, data: bytes) -> None:
        """Append bytes."""
        assert self._begun, "begin() first"
        self._chunks.append(data)
        self._gathered += len(data)
        self.size += len(data)
        if self._gathered >= self.GATHER:
            self.flush()

    def flush(self) -> None:
        """Hand the gathered bytes to the kernel."""
        if not self._chunks:
            return
        data = memoryview(b"".join(self._chunks))
        self._chunks.clear()
        self._gathered = 0
        while data:
            n = os.pwrite(self._fd, data, self._at)
            self._at += n
            data = data[n:]

    def commit(self, fsync: bool = False) -> None:
        """Write, and close; the journal entry still decides until the ledger commits."""
        assert self._begun, "begin() first"
        try:
            self.flush()
            if self.size < self.end:
                os.ftruncate(self._fd, self.size)
            if fsync:
                os.fsync(self._fd)
            self.stamp = stamp_of(os.fstat(self._fd))
        finally:
            self._close()

    def _close(self) -> None:
        if self._open:
            self._open = False
            os.close(self._fd)

    def discard(self) -> None:
        """Close without writing more; :func:`rollback` puts the old bytes back."""
        self._chunks.clear()
        self._close()

    def undo(self, data: DataDir) -> dict[str, Any]:
        """This file's journal record (its path relative to the data folder)."""
        return {"path": data.relative(self.target), "keep": self.keep,
                "tail": base64.b64encode(self.tail).decode("ascii")}


class Journal:
    """This process's journal file for the current run: one JSON line per resume.

    Appending a line to an open file is cheap where creating a file per resume
    is not (a file system transaction each). Each process (a forked worker too)
    writes its own file, so lines never interleave; a line cut short by a kill
    was never complete, and no output was touched after it.
    """

    def __init__(self) -> None:
        self._fd = -1
        self._pid = -1
        self._folder: Path | None = None

    def _open(self, folder: Path) -> int:
        if self._fd < 0 or self._pid != os.getpid() or self._folder != folder:
            # A forked worker must not share its parent's file offset; another data
            # folder gets a file of its own.
            self.close()
            self._fd = os.open(folder / f"{os.getpid()}-{random_hex(4)}.jsonl",
                               os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_EXCL | _NOFOLLOW, 0o600)
            self._pid, self._folder = os.getpid(), folder
        return self._fd

    def close(self) -> None:
        """Close this process's file (the run that wrote it is over)."""
        if self._fd >= 0 and self._pid == os.getpid():
            os.close(self._fd)
        self._fd, self._pid, self._folder = -1, -1, None

    def append(self, folder: Path, record: dict[str, Any], fsync: bool) -> None:
        """Write one line and return once the kernel (or, with ``fsync``, the disk) has it."""
        fd = self._open(folder)
        view = memoryview(orjson.dumps(record) + b"\n")
        while view:
            view = view[os.write(fd, view):]
        if fsync:
            os.fsync(fd)


#: The process's journal.
journal = Journal()


def new_generation() -> str:
    """A token that names one resume (kept in the ledger when it commits)."""
    return random_hex(8)


def write_entry(data: DataDir, source: str, generation: str, files: list[AppendFile], fsync: bool) -> dict[str, Any]:
    """Record how to undo the resume of ``source`` before any of ``files`` changes; return the entry."""
    # "at" orders two resumes of one source: a worker died in the first, and the retry's undo
    # bytes are the half-written ones (see recover).
    entry = {"source": source, "generation": generation, "at": time.time_ns(),
             "files": [f.undo(data) for f in files]}
    journal.append(data.journal, entry, fsync)
    return entry


def _restore(data: DataDir, record: dict[str, Any], fsync: bool) -> None:
    target = (data.root / str(record["path"])).resolve()
    # An entry is our own line, but a data folder may have been tampered with.
    if data.root.resolve() not in target.parents:
        return
    try:
        keep = int(record["keep"])
        tail = base64.b64decode(str(record["tail"]), validate=True)
    except (KeyError, ValueError, TypeError):
        return  # not a line this code wrote
    try:
        fd = os.open(target, os.O_WRONLY | _NOFOLLOW)
    except FileNotFoundError:
        return
    try:
        os.ftruncate(fd, keep)
        if tail:
            os.pwrite(fd, tail, keep)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _restore_files(data: DataDir, entry: dict[str, Any], fsync: bool) -> None:
    for record in entry.get("files", []):
        if isinstance(record, dict):
            _restore(data, record, fsync)


def rollback(data: DataDir, entry: dict[str, Any], fsync: bool = False) -> None:
    """Put every file of an entry back as it was, and mark it settled.

    The mark matters: the same run may then import the source whole, and a
    later recovery must not put the old bytes back over that.
    """
    _restore_files(data, entry, fsync)
    journal.append(data.journal, {"settled": entry["generation"]}, fsync)


def _lines(path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    try:
        raw = path.read_bytes()
    except OSError:
        return out
    for line in raw.split(b"\n"):
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # the line a kill cut short (its resume had not touched a file yet)
        if isinstance(value, dict):
            out.append(value)
    return out


def _written_at(entry: dict[str, Any]) -> int:
    at = entry.get("at")
    return at if isinstance(at, int) else 0


def recover(data: DataDir, committed: Callable[[str], str | None], fsync: bool = False) -> int:
    """Settle every entry in the journal: drop the committed, roll back the rest; empty it.

    ``committed(source)`` gives the generation the ledger holds for a source.
    Call only while holding the import lock, with no import running. Returns
    how many resumes were rolled back.
    """
    journal.close()  # no import runs now, so this process's lines are all written
    if not data.journal.is_dir():
        return 0
    files = sorted(data.journal.glob("*.jsonl"))
    entries = [e for f in files for e in _lines(f)]
    settled = {e["settled"] for e in entries if isinstance(e.get("settled"), str)}
    by_source: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        generation, source = e.get("generation"), e.get("source")
        if isinstance(generation, str) and isinstance(source, str) and generation not in settled:
            by_source.setdefault(source, []).append(e)
    rolled = 0
    for source, mine in by_source.items():
        # A source resumed twice in one run: a worker died in the first resume and the
        # retry's undo bytes are that half-written state. When the retry committed, the
        # first is superseded; when neither did, newest first puts back the original.
        if committed(source) in {e["generation"] for e in mine}:
            continue
        mine.sort(key=_written_at, reverse=True)
        for e in mine:
            _restore_files(data, e, fsync)
            rolled += 1
    for f in files:
        f.unlink(missing_ok=True)
    return rolled


def clear(data: DataDir) -> None:
    """Empty the journal of a run whose every resume was committed or rolled back in its process."""
    journal.close()
    for f in data.journal.glob("*.jsonl"):
        f.unlink(missing_ok=True)


__all__ = ["AppendFile", "Journal", "clear", "journal", "new_generation", "recover", "rollback", "write_entry"]
