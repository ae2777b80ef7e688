"""Reading opencode's sessions as records: one per session, then one per message with its parts.

Both shapes give the same records, the shape of the tree's JSON files:

- ``{"kind": "session", "session": {...}}``: ``id``, ``parentID``, ``directory``, ``title``,
  ``version``, ``time`` (``created``, ``updated``, unix ms);
- ``{"kind": "message", "message": {...}, "parts": [...]}``: the message (``id``, ``sessionID``,
  ``role``, ``time``, ``modelID``/``providerID``, ``tokens``, ``cost``, ``finish``, ``error``...)
  and its parts in id order (``type``: ``text``, ``reasoning``, ``tool``, ``step-start``,
  ``step-finish``, ``compaction``...).

A record's ``line`` and ``offset`` are its ordinal; its ``end`` is the cursor the core hands back
as ``start`` (see ``source_members`` in docs/plugins.md): for a tree, the ordinal after it; for
the database, the newest ``time_updated`` the read saw (a watermark).

The database is read in one transaction: a consistent snapshot, and in WAL mode a reader never
blocks opencode's writes. A continuation reads only the rows updated since the watermark (and
unfinished messages); the translation skips what it already gave (see :mod:`.translate`).

The file is untrusted, and nothing is written beside it (see :func:`_connect`): while opencode
runs (its ``-wal`` and ``-shm`` are there) it is opened read-only (``mode=ro``) and shares them;
when opencode is not running it is opened ``immutable`` (SQLite would otherwise create a
``-wal`` and ``-shm`` beside it); a ``-wal`` left without its ``-shm`` (opencode killed) is read
from a private copy of the two files. Only tables are read under opencode's names (a view could
be an endless recursive query), and every statement is bounded in time (:data:`QUERY_SECONDS`,
SQLite's progress handler), so a hostile file costs an error, never a hung import.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rematch_trace.host.source import Problem, RawRecord, Source
from rematch_trace.importing.reader import loads

from . import where

#: How long a read waits on a lock (a checkpoint truncating the log) before it gives up.
BUSY_MS = 2000


def read(source: Source, start: int) -> Iterator[RawRecord | Problem]:
    """The records of a database or of one session of a tree."""
    if where.is_database(source.path):
        return read_database(source.path, start)
    return read_tree(source.path, start)


# -- the database ------------------------------------------------------------------------------

#: The longest one statement may run (each step of a cursor counts from the latest statement
#: begun): opencode's own queries here take milliseconds; a hostile file's take forever.
QUERY_SECONDS = 30.0
#: How many SQLite virtual-machine steps between two looks at the clock.
_STEPS = 10_000
#: The tables read, which must be tables (not views, not virtual tables).
TABLES = ("session", "message", "part")


class _Deadline:
    """SQLite's progress handler: interrupts a statement running past :data:`QUERY_SECONDS`."""

    def __init__(self) -> None:
        self.until = 0.0
        self.expired = False

    def arm(self) -> None:
        """Start the clock for the next statement."""
        self.until = time.monotonic() + QUERY_SECONDS

    def __call__(self) -> int:
        if time.monotonic() > self.until:
            self.expired = True
            return 1  # non-zero: SQLite interrupts the statement
        return 0


def _uri(path: Path, mode: str) -> str:
    return "file:" + quote(os.path.abspath(path)) + "?" + mode


def _connect(path: Path, scratch: list[str]) -> tuple[sqlite3.Connection, _Deadline]:
    """A read-only connection that writes nothing beside ``path`` (see the module's docstring).

    ``scratch`` gets the private folder of a copy, for the caller to remove.
    """
    wal, shm = Path(str(path) + "-wal"), Path(str(path) + "-shm")
    if wal.exists() and shm.exists():
        uri = _uri(path, "mode=ro")  # opencode's own log and index: shared, nothing created
    elif not wal.exists():
        uri = _uri(path, "immutable=1")
    else:
        folder = tempfile.mkdtemp(prefix="rematch-opencode-")
        scratch.append(folder)
        copy = Path(folder) / "opencode.db"
        shutil.copyfile(path, copy)
        shutil.copyfile(wal, Path(folder) / "opencode.db-wal")
        uri = _uri(copy, "mode=ro")
    con = sqlite3.connect(uri, uri=True, timeout=BUSY_MS / 1000, isolation_level=None, check_same_thread=False)
    deadline = _Deadline()
    deadline.arm()
    con.set_progress_handler(deadline, _STEPS)
    con.execute("PRAGMA query_only = 1")
    return con, deadline


def _not_tables(con: sqlite3.Connection) -> list[str]:
    """opencode's names that are not plain tables in this file (a view, a virtual table, missing)."""
    found = {name: (kind, sql or "") for name, kind, sql in con.execute(
        "SELECT name, type, sql FROM sqlite_master WHERE name IN (?, ?, ?)", TABLES)}
    bad = []
    for name in TABLES:
        kind, sql = found.get(name, ("missing", ""))
        if kind != "table" or sql.lstrip().upper().startswith("CREATE VIRTUAL"):
            bad.append(f"{name} ({'virtual table' if kind == 'table' else kind})")
    return bad


def _json(text: Any) -> tuple[Any, str | None]:
    """The JSON value of a ``data`` column, or ``None`` and why not (nested too deep, invalid)."""
    if not isinstance(text, (str, bytes)):
        return None, "not text"
    try:
        return loads(text.encode() if isinstance(text, str) else text), None
    except ValueError as err:
        return None, str(err)


#: Messages a continuation reads again whatever their time: assistant messages neither completed
#: nor failed (one held back, or one opencode abandoned when it was killed and a later prompt follows).
_UNFINISHED = ("(json_extract(data, '$.role') = 'assistant' AND json_extract(data, '$.time.completed') IS NULL "
               "AND json_extract(data, '$.error') IS NULL)")


def read_database(path: Path, start: int = 0) -> Iterator[RawRecord | Problem]:
    """The sessions of the database, each followed by its messages, in one read transaction.

    ``start`` is the watermark of the read before (0: all): the newest ``time_updated`` of any
    session, message or part row it saw, which every record's ``end`` carries. From a watermark,
    only the sessions with a row updated since (or at it: a row written in the same millisecond
    after that snapshot) are read, and of them only the messages updated since, those with a
    part updated since, and the unfinished ones; the translation skips what it gave already.
    """
    scratch: list[str] = []
    try:
        con, deadline = _connect(path, scratch)
    except (OSError, sqlite3.Error) as err:
        _clean(scratch)
        yield Problem(str(path), 0, f"cannot open the database read-only: {err}", "unreadable")
        return
    n = 0
    try:
        con.execute("BEGIN")  # deferred: the first read fixes the snapshot every later one sees
        bad = _not_tables(con)
        if bad:
            yield Problem(str(path), 0, "not opencode's tables, not read: " + ", ".join(bad), "unreadable")
            return
        deadline.arm()
        mark = max(start, *(con.execute(f"SELECT coalesce(max(time_updated), 0) FROM {t}").fetchone()[0]
                            for t in TABLES))
        columns = "id, parent_id, directory, title, version, time_created, time_updated"
        deadline.arm()
        if start > 0:
            sessions = con.execute(
                f"SELECT {columns} FROM session WHERE time_updated >= ?1 "
                "OR id IN (SELECT session_id FROM message WHERE time_updated >= ?1 OR " + _UNFINISHED + ") "
                "OR id IN (SELECT session_id FROM part WHERE time_updated >= ?1) ORDER BY time_created, id",
                (start,)).fetchall()
        else:
            sessions = con.execute(f"SELECT {columns} FROM session ORDER BY time_created, id").fetchall()
        for sid, parent, directory, title, version, created, updated in sessions:
            n += 1
            yield RawRecord(n, n, mark, {"kind": "session", "session": {
                "id": sid, "parentID": parent, "directory": directory, "title": title, "version": version,
                "time": {"created": created, "updated": updated}}})
            deadline.arm()
            if start > 0:
                messages = con.execute(
                    "SELECT id, data FROM message WHERE session_id = ?1 AND (time_updated >= ?2 OR " + _UNFINISHED
                    + " OR id IN (SELECT message_id FROM part WHERE session_id = ?1 AND time_updated >= ?2)) "
                    "ORDER BY time_created, id", (sid, start)).fetchall()
            else:
                messages = con.execute("SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id",
                                       (sid,)).fetchall()
            for mid, data in messages:
                n += 1
                msg, why = _json(data)
                if not isinstance(msg, dict):
                    yield Problem(str(path), n, f"message {mid}: data is not a JSON object" + (f" ({why})" if why else ""))
                    continue
                msg.update(id=mid, sessionID=sid)
                parts: list[Any] = []
                deadline.arm()
                for pid, pdata in con.execute("SELECT id, data FROM part WHERE message_id = ? ORDER BY id",
                                              (mid,)).fetchall():
                    part, why = _json(pdata)
                    if not isinstance(part, dict):
                        yield Problem(str(path), n, f"part {pid}: data is not a JSON object" + (f" ({why})" if why else ""))
                        continue
                    part.update(id=pid, messageID=mid, sessionID=sid)
                    parts.append(part)
                yield RawRecord(n, n, mark, {"kind": "message", "message": msg, "parts": parts})
    except sqlite3.Error as err:
        why = f"a query ran past {QUERY_SECONDS:g} s, stopped" if deadline.expired else str(err)
        yield Problem(str(path), n, f"database read failed: {why}", "unreadable")
    finally:
        try:
            con.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        con.close()
        _clean(scratch)


def _clean(scratch: list[str]) -> None:
    for folder in scratch:
        shutil.rmtree(folder, ignore_errors=True)


# -- the tree ----------------------------------------------------------------------------------

def _load(path: Path) -> Any:
    with open(path, "rb") as f:
        return loads(f.read())  # a ValueError for JSON nested past the parser's stack too


def _names(folder: Path) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(folder) if e.name.endswith(".json") and e.is_file())
    except FileNotFoundError:
        return []


def read_tree(path: Path, start: int) -> Iterator[RawRecord | Problem]:
    """One session of a tree: its record, then its messages from ``start`` on.

    Nothing when a database sits beside the tree (opencode migrated the tree into it), and
    nothing for a session's diff or share file (``where.ASIDE``).
    The message before ``start`` is read again: the translation may have held it back (a
    message opencode was still writing); it skips what it already gave.
    """
    storage = where.tree_root(path)
    if where.aside(path) or (storage is not None and where.migrated(storage)):
        return  # opencode moved this tree into the database beside it: read there
    try:
        doc = _load(path)
    except FileNotFoundError:
        yield Problem(str(path), 0, "the session file is gone", "unreadable")
        return
    except (OSError, ValueError) as err:
        yield Problem(str(path), 1, f"session file: {err}")
        return
    if not isinstance(doc, dict) or storage is None:
        yield Problem(str(path), 1, "session file is not a JSON object")
        return
    yield RawRecord(1, 1, 2, {"kind": "session", "session": doc})
    msg_dir = storage / "message" / path.stem
    names = _names(msg_dir)
    first = max(2, start - 1)
    for i, name in enumerate(names[first - 2:], start=first):
        mpath = msg_dir / name
        try:
            msg = _load(mpath)
        except FileNotFoundError:
            continue  # removed (a revert) since it was listed
        except (OSError, ValueError) as err:
            yield Problem(str(mpath), i, f"message file: {err}")
            continue
        if not isinstance(msg, dict):
            yield Problem(str(mpath), i, "message file is not a JSON object")
            continue
        msg.setdefault("id", name[:-5])
        parts: list[Any] = []
        part_dir = storage / "part" / name[:-5]
        for pname in _names(part_dir):
            try:
                part = _load(part_dir / pname)
            except FileNotFoundError:
                continue
            except (OSError, ValueError) as err:
                yield Problem(str(part_dir / pname), i, f"part file: {err}")
                continue
            if isinstance(part, dict):
                part.setdefault("id", pname[:-5])
                parts.append(part)
            else:
                yield Problem(str(part_dir / pname), i, "part file is not a JSON object")
        yield RawRecord(i, i, i + 1, {"kind": "message", "message": msg, "parts": parts})
