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
import hashlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import orjson

from .errors import RestartImport
from .output import DataDir

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class AppendFile:
    """An existing output continued in place past its first ``keep`` bytes.

    Opening reads the bytes past ``keep`` (the undo information) and changes
    nothing; :meth:`begin` truncates, once the journal holds those bytes.
    """

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
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self.f: IO[bytes] | None = None
        self.size = keep

    def begin(self) -> None:
        """Cut the file back to its kept length and start appending."""
        os.ftruncate(self._fd, self.keep)
        self.f = os.fdopen(self._fd, "r+b", buffering=256 * 1024)
        self.f.seek(self.keep)

    def write(self, data: bytes) -> None:
        """Append bytes."""
        assert self.f is not None, "begin() first"
        self.f.write(data)
        self.size += len(data)

    def flush(self) -> None:
        """Hand the buffered bytes to the kernel."""
        if self.f is not None:
            self.f.flush()

    def commit(self, fsync: bool = False) -> None:
        """Flush and close; the journal entry still decides until the ledger commits."""
        assert self.f is not None, "begin() first"
        self.f.flush()
        if fsync:
            os.fsync(self.f.fileno())
        self.f.close()

    def discard(self) -> None:
        """Close without flushing more; :func:`rollback` puts the old bytes back."""
        if self.f is None:
            os.close(self._fd)
            return
        try:
            self.f.close()
        except OSError:
            pass  # a full disk refusing the buffered rest: the rollback rewrites it anyway

    def undo(self, root: Path) -> dict[str, Any]:
        """This file's journal record (its path relative to the data folder)."""
        return {"path": self.target.relative_to(root).as_posix(), "keep": self.keep,
                "tail": base64.b64encode(self.tail).decode("ascii")}


def journal_path(data: DataDir, source: str) -> Path:
    """The journal entry of one source file."""
    digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return data.journal / f"{digest}.json"


def new_generation() -> str:
    """A token that names one resume (kept in the ledger when it commits)."""
    return secrets.token_hex(8)


def write_entry(data: DataDir, source: str, generation: str, files: list[AppendFile], fsync: bool) -> Path:
    """Record how to undo the resume of ``source`` before any of ``files`` changes."""
    body = orjson.dumps({"source": source, "generation": generation, "files": [f.undo(data.root) for f in files]})
    path = journal_path(data, source)
    # Written in place, not renamed: recovery drops an entry that does not parse
    # (killed mid-write, before any file changed), and a rename per resume costs.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW, 0o600)
    try:
        view = memoryview(body)
        while view:
            view = view[os.write(fd, view):]
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    return path


def _restore(data: DataDir, record: dict[str, Any], fsync: bool) -> None:
    target = (data.root / record["path"]).resolve()
    # An entry is our own file, but a data folder may have been tampered with.
    if data.root.resolve() not in target.parents:
        return
    try:
        fd = os.open(target, os.O_WRONLY | _NOFOLLOW)
    except FileNotFoundError:
        return
    try:
        keep = int(record["keep"])
        tail = base64.b64decode(record["tail"])
        os.ftruncate(fd, keep)
        if tail:
            os.pwrite(fd, tail, keep)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def rollback(data: DataDir, entry: Path, fsync: bool = False) -> None:
    """Put every file of a journal entry back as it was, then drop the entry."""
    try:
        body = orjson.loads(entry.read_bytes())
    except FileNotFoundError:
        return
    except (OSError, orjson.JSONDecodeError):
        body = {"files": []}  # a torn entry: no file had been touched yet
    for record in body.get("files", []):
        _restore(data, record, fsync)
    entry.unlink(missing_ok=True)


def recover(data: DataDir, committed: Callable[[str], str | None], fsync: bool = False) -> int:
    """Settle every entry a crash left: drop the committed, roll back the rest.

    ``committed(source)`` gives the generation the ledger holds for a source.
    Call only while holding the import lock. Returns how many were rolled back.
    """
    if not data.journal.is_dir():
        return 0
    rolled = 0
    for entry in sorted(data.journal.glob("*.json")):
        try:
            body = orjson.loads(entry.read_bytes())
            source, generation = str(body["source"]), str(body["generation"])
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
            entry.unlink(missing_ok=True)  # torn while written: no file had been touched yet
            continue
        if committed(source) == generation:
            entry.unlink(missing_ok=True)
        else:
            rollback(data, entry, fsync)
            rolled += 1
    return rolled


__all__ = ["AppendFile", "journal_path", "new_generation", "recover", "rollback", "write_entry"]
