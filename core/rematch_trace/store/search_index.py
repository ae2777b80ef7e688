"""The full-text search index of a data folder: ``search.sqlite``, SQLite FTS5 over the traces and sources.

From the traces (``traces/*.jsonl``): each prompt (``input.text``), each tool call's name and
input (``tool_result.input``), each blocked call's reason and each mark's note, and each
assistant turn's text head (``turn_end.text_head``) of a session whose source gave no text.
The trace is the same for every harness and is already what rematch keeps (bounded, redacted
as the import's settings say); a row imported with redaction off is redacted here before it is
indexed, so the index never holds raw text. From the source transcripts, through the plugins'
``conversation_items`` hook (the conversation view's reader): the assistant's whole text and
each tool call's output, always redacted (:meth:`SearchIndex.sync_sources`).

The index follows the traces incrementally. Each indexed record keeps its byte span in its
trace and a digest of that line: a trace that grew (a continued import, a live session) is
checked back from its last indexed record to the newest one still in place (a continuation
truncates only the trace's tail and writes on), the records after it are dropped and only the
lines from there on are read (also when the import wrote it as a new file with the same records
first). A trace whose first indexed record, or all of its last ones, changed is indexed again
from its start. A trace that is gone (``rematch forget``)
loses its entries. The file can be deleted at any time: the next sync rebuilds it.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from rematch_trace.store.datafolder import DataDir
from rematch_trace.store.search_rows import Handed as Handed  # (its users' name for these)
from rematch_trace.store.search_rows import SaidRow as SaidRow
from rematch_trace.store.search_rows import TraceRows
from rematch_trace.store.search_rows import digest as _digest
from rematch_trace.trace.turns import Turns

if TYPE_CHECKING:
    from rematch_trace.store.search_handover import HandedRows

#: The index's file name inside the data folder.
INDEX_NAME = "search.sqlite"
#: Bumped when what is indexed, or how, changes: an index of another version is rebuilt.
INDEX_VERSION = 3
#: How many of a session's newest indexed records are checked for the point a grown trace continues from.
WALK_BACK = 64
#: Characters of one tool output indexed (as the trace bounds a tool input); the rest is not searchable.
OUTPUT_CHARS = 8 * 1024
#: Characters of one piece of the assistant's text indexed.
SAID_CHARS = 64 * 1024

# calls and turns are WITHOUT ROWID: each is its primary key, one b-tree instead of a table and its index
# (15 MB less of 437 on 1 GiB of Claude Code sessions; bench/search_latency.py --sizes). An index made before
# keeps its tables as they are: the same statements read and write both.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS traces (
    key TEXT PRIMARY KEY, ino INTEGER NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    end_off INTEGER NOT NULL, started INTEGER, session_id TEXT
);
CREATE TABLE IF NOT EXISTS spans (
    id INTEGER PRIMARY KEY, key TEXT NOT NULL, off INTEGER NOT NULL, len INTEGER NOT NULL, digest BLOB NOT NULL,
    src TEXT
);
CREATE INDEX IF NOT EXISTS spans_by_src ON spans(src) WHERE src IS NOT NULL;
CREATE TABLE IF NOT EXISTS sources (
    path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, end_off INTEGER NOT NULL,
    streams TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS calls (
    key TEXT NOT NULL, call_id TEXT NOT NULL, seq INTEGER, PRIMARY KEY (key, call_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS turns (key TEXT NOT NULL, seq INTEGER NOT NULL, t INTEGER NOT NULL, PRIMARY KEY (key, seq))
    WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS spans_by_key ON spans(key, off);
CREATE VIRTUAL TABLE IF NOT EXISTS text USING fts5(
    body, kind UNINDEXED, seq UNINDEXED, t UNINDEXED, tokenize = 'unicode61 remove_diacritics 2'
);
"""


def index_path(data: DataDir) -> Path:
    """Where the data folder's search index is."""
    return data.root / INDEX_NAME


class SyncFigures:
    """What a sync did: traces read in full, traces continued, traces dropped, records indexed."""

    # A plain class, not attrs: ``rematch search`` imports this module on every query, and attrs costs
    # more to import than the query takes (tests/search/test_search_imports.py).
    __slots__ = ("dropped", "full", "grown", "records")

    def __init__(self, full: int = 0, grown: int = 0, dropped: int = 0, records: int = 0) -> None:
        self.full, self.grown, self.dropped, self.records = full, grown, dropped, records

    def __repr__(self) -> str:
        return (f"SyncFigures(full={self.full}, grown={self.grown}, dropped={self.dropped}, "
                f"records={self.records})")


class Hit(NamedTuple):
    """One search hit: the session's trace key, the record's seq, kind and time, a snippet, its rank."""

    key: str
    session_id: str | None
    seq: int | None
    kind: str
    t: int | None
    snippet: str
    rank: float


class SearchIndex:
    """An open search index. Use as a context manager."""

    def __init__(self, path: Path, *, readonly: bool = False, sources: bool = True) -> None:
        """Open (creating it, or rebuilding one of another version) the index at ``path``.

        ``sources``: index the source transcripts' text too (the assistant's text, tool outputs),
        through each plugin's ``conversation_items`` hook; ``False`` indexes the traces only.
        """
        self.path = path
        self.sources = sources
        #: Trace keys whose assistant text is indexed from their source (their turn_end heads are not).
        self._conv: set[str] = set()
        if readonly:
            from rematch_trace.store.ledger import open_readonly

            self.db = open_readonly(path)
            return
        if path.is_symlink():
            raise sqlite3.OperationalError(f"{path} is a symbolic link; refusing to write through it")
        # Created private first: SQLite gives its -wal and -shm files the database's mode.
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600))
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        if int(self.db.execute("PRAGMA user_version").fetchone()[0]) != INDEX_VERSION:
            self._drop_all()
        self.db.executescript(_SCHEMA)
        self.db.execute(f"PRAGMA user_version={INDEX_VERSION}")

    def __enter__(self) -> SearchIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    def _drop_all(self) -> None:
        for table in ("text", "spans", "traces", "sources", "calls", "turns"):
            self.db.execute(f"DROP TABLE IF EXISTS {table}")

    def clear(self) -> None:
        """Empty the index (``rematch search --rebuild``): the next sync reads every trace again."""
        self._drop_all()
        self.db.executescript(_SCHEMA)
        self.db.execute("VACUUM")

    def drop(self, key: str) -> None:
        """Remove one session's entries, its trace's and its source's (inside the caller's transaction or its own).

        Its source is forgotten too, so a session imported again (``rematch forget``, then ``import``: the
        same file, the same stamp) has its source read again.
        """
        self.db.execute("DELETE FROM sources WHERE path IN (SELECT DISTINCT src FROM spans WHERE key = ? AND src "
                        "IS NOT NULL) OR instr(streams, ?) > 0", (key, orjson.dumps(key).decode()))
        self.db.execute("DELETE FROM text WHERE rowid IN (SELECT id FROM spans WHERE key = ?)", (key,))
        self.db.execute("DELETE FROM spans WHERE key = ?", (key,))
        self.db.execute("DELETE FROM traces WHERE key = ?", (key,))
        self.db.execute("DELETE FROM calls WHERE key = ?", (key,))
        self.db.execute("DELETE FROM turns WHERE key = ?", (key,))

    def _drop_trace(self, key: str) -> None:
        """Remove the entries read from one trace (a trace read again whole); its source's stay."""
        self.db.execute("DELETE FROM text WHERE rowid IN (SELECT id FROM spans WHERE key = ? AND src IS NULL)", (key,))
        self.db.execute("DELETE FROM spans WHERE key = ? AND src IS NULL", (key,))
        self.db.execute("DELETE FROM calls WHERE key = ?", (key,))
        self.db.execute("DELETE FROM turns WHERE key = ?", (key,))

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """One write transaction, taken at once (``BEGIN IMMEDIATE``): committed, or rolled back on any exit."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise

    def _source_keys(self) -> set[str]:
        """The traces whose sources gave rows (read at the start of each write transaction)."""
        return {r[0] for r in self.db.execute("SELECT DISTINCT key FROM spans WHERE src IS NOT NULL")}

    def forget(self, key: str) -> None:
        """Remove one trace's entries now (``rematch forget``)."""
        with self._writing():
            self.drop(key)

    def _changes(self, data: DataDir, only: set[str] | None = None) -> tuple[list[str], list[str], dict[str, Any]]:
        """The traces gone since the last sync, those new or changed (their stamp as indexed differs), and
        each indexed trace's row (key, inode, size, mtime, end offset)."""
        #: Each trace's inode, size and mtime (three numbers, not a stat result: one per trace of an archive).
        stats: dict[str, tuple[int, int, int]] = {}
        try:
            with os.scandir(data.traces) as it:
                for e in it:
                    name = e.name
                    if not name.endswith(".jsonl") or name.startswith("."):
                        continue
                    key = name[:-6]
                    if only is not None and key not in only:
                        continue
                    try:
                        if e.is_file(follow_symlinks=False):
                            st = e.stat(follow_symlinks=False)
                            stats[key] = (st.st_ino, st.st_size, st.st_mtime_ns)
                    except OSError:
                        continue
        except FileNotFoundError:
            pass
        known = {r[0]: r for r in self.db.execute("SELECT key, ino, size, mtime_ns, end_off FROM traces")}
        gone = [k for k in known.keys() - stats.keys() if only is None or k in only]
        changed = sorted(k for k, stamp in stats.items()
                         if k not in known or (known[k][1], known[k][2], known[k][3]) != stamp)
        return gone, changed, known

    def stale(self, data: DataDir) -> bool:
        """Whether :meth:`sync` has anything to do (also on a read-only index: ``rematch search`` asks first
        and opens the index for writing only then, since opening and closing it so costs more than a query)."""
        if int(self.db.execute("PRAGMA user_version").fetchone()[0]) != INDEX_VERSION:
            return True
        gone, changed, _ = self._changes(data)
        return bool(gone or changed)

    def sync(self, data: DataDir, only: set[str] | None = None, jobs: int = 1,
             handed: HandedRows | None = None) -> SyncFigures:
        """Bring the index up to date with the data folder's traces (``only``: just these keys).

        ``handed``: the rows the import's workers read with the sources (``rematch import``); a source
        they cover is not read again (:meth:`sync_sources`).

        An unchanged trace costs one ``stat`` (its inode, size and mtime as indexed): a rerun
        that changed nothing reads no trace.
        """
        figures = SyncFigures()
        gone, changed, known = self._changes(data, only)
        if not gone and not changed:
            return figures
        raw = _raw_keys(data)
        with self._writing():
            self._conv = self._source_keys()
            for key in sorted(gone):
                self.drop(key)
                figures.dropped += 1
            for key in changed:
                self._sync_one(data, key, known.get(key), key in raw, figures, handed)
            if self.sources:
                self._sync_sources(data, only, figures, jobs, handed)
        return figures

    def _sync_one(self, data: DataDir, key: str, known: tuple[Any, ...] | None, raw: bool,
                  figures: SyncFigures, handed: HandedRows | None = None) -> None:
        path = os.path.join(data.traces, f"{key}.jsonl")
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            if known is not None:
                self.drop(key)
                figures.dropped += 1
            return
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            start = self._continue_from(key, f) if known is not None else None
            if start is None:
                if known is not None:
                    self._drop_trace(key)
                start = 0
                figures.full += 1
            else:
                figures.grown += 1
            # The rows the import's worker made as it wrote this trace: taken when they are of this very
            # file (its size now is where they end) and made as this index would (redacted when it is raw).
            given = handed.take_trace(key) if handed is not None else None
            if given is not None and given[6] == (st.st_ino, st.st_size, st.st_mtime_ns) and given[5] == raw:
                g_start, g_end, rows, started, session_id = given[:5]
                if start < g_start:
                    # Lines before the worker's first (kept in place by a continuation): read here.
                    self._read(key, f, start, st, raw, figures, stop=g_start, record=False)
                self._insert(key, [r for r in rows if r[0] >= start], figures)
                self._record_trace(key, st, g_end, started, session_id)
                return
            self._read(key, f, start, st, raw, figures)

    def _continue_from(self, key: str, f: Any) -> int | None:
        """The offset a grown trace is read on from, its later entries dropped; ``None``: read it all again."""
        # Not the inode: a continued import may write the session's trace anew (a new file) with the
        # same records first. Its first indexed record, and one of its last, must still be in place.
        rows = self.db.execute("SELECT id, off, len, digest FROM spans WHERE key = ? AND src IS NULL "
                               "ORDER BY off DESC LIMIT ?", (key, WALK_BACK)).fetchall()
        if not rows:
            # Nothing searchable indexed yet: what was read had no text; read it again from the start.
            return None
        first = self.db.execute("SELECT off, len, digest FROM spans WHERE key = ? AND src IS NULL ORDER BY off LIMIT 1",
                                (key,)).fetchone()
        f.seek(first[0])
        if _digest(f.read(first[1])) != first[2]:
            return None
        for i, (_, off, length, digest) in enumerate(rows):
            f.seek(off)
            if _digest(f.read(length)) == digest:
                later = [r[0] for r in rows[:i]]
                if later:
                    marks = ",".join("?" * len(later))
                    self.db.execute(f"DELETE FROM text WHERE rowid IN ({marks})", later)
                    self.db.execute(f"DELETE FROM spans WHERE id IN ({marks})", later)
                return int(off + length)
        return None

    def _read(self, key: str, f: Any, start: int, st: os.stat_result, raw: bool, figures: SyncFigures,
              stop: int | None = None, record: bool = True) -> None:
        """Index a trace's whole lines from ``start`` (to ``stop``), as the import's worker would have."""
        redact = None
        if raw:
            from rematch_trace.security.redact import default_redactor

            redact = default_redactor().redact
        f.seek(start)
        rows = TraceRows(start, redact)
        off = start
        for line in f:
            if not line.endswith(b"\n") or (stop is not None and off >= stop):
                break  # a line still being written: the next sync reads it whole
            here, off = off, off + len(line)
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(rec, dict):
                rows.feed(here, line, rec)
        self._insert(key, rows.rows, figures)
        if record:
            self._record_trace(key, st, off, rows.started, rows.session_id)

    def _insert(self, key: str, rows: list[Any], figures: SyncFigures) -> None:
        """Insert one trace's rows (:class:`~rematch_trace.store.search_rows.TraceRows`), a statement per
        table for all of them; the ids are known ahead (the sync holds the write lock)."""
        calls = [(key, r[7], r[5]) for r in rows if r[7] is not None and r[5] is not None]
        if calls:
            self.db.executemany("INSERT OR REPLACE INTO calls (key, call_id, seq) VALUES (?,?,?)", calls)
        # Where the source's assistant texts stand (trace.turns): a text's hit carries its turn's seq.
        turns = [(key, r[5], r[6]) for r in rows if r[8] and r[5] is not None and r[6] is not None]
        if turns:
            self.db.executemany("INSERT OR REPLACE INTO turns (key, seq, t) VALUES (?,?,?)", turns)
        conv = key in self._conv  # the assistant's text is indexed whole from the source transcript
        text = [r for r in rows if r[3] and not (r[8] and conv)]
        if not text:
            return
        first = int(self.db.execute("SELECT coalesce(max(id), 0) FROM spans").fetchone()[0]) + 1
        self.db.executemany("INSERT INTO spans (id, key, off, len, digest) VALUES (?,?,?,?,?)",
                            [(first + i, key, r[0], r[1], r[2]) for i, r in enumerate(text)])
        self.db.executemany("INSERT INTO text (rowid, body, kind, seq, t) VALUES (?,?,?,?,?)",
                            [(first + i, r[4], r[3], r[5], r[6]) for i, r in enumerate(text)])
        figures.records += len(text)

    def _record_trace(self, key: str, st: os.stat_result, off: int, started: int | None,
                      session_id: str | None) -> None:
        self.db.execute(
            """INSERT INTO traces (key, ino, size, mtime_ns, end_off, started, session_id) VALUES (?,?,?,?,?,?,?)
               ON CONFLICT(key) DO UPDATE SET ino=excluded.ino, size=excluded.size, mtime_ns=excluded.mtime_ns,
                   end_off=excluded.end_off, started=coalesce(excluded.started, traces.started),
                   session_id=coalesce(excluded.session_id, traces.session_id)""",
            (key, st.st_ino, st.st_size if off == st.st_size else -1, st.st_mtime_ns, off, started, session_id),
        )

    def sync_sources(self, data: DataDir, only: set[str] | None = None, jobs: int = 1,
                     handed: HandedRows | None = None) -> SyncFigures:
        """Index what the sources the import read since the last sync hold (:meth:`sync` does it when a
        trace changed); in a transaction of its own. ``handed``: as :meth:`sync`'s."""
        figures = SyncFigures()
        with self._writing():
            self._conv = self._source_keys()
            self._sync_sources(data, only, figures, jobs, handed)
        return figures

    def _sync_sources(self, data: DataDir, only: set[str] | None, figures: SyncFigures, jobs: int = 1,
                      handed: HandedRows | None = None) -> None:
        """Index the assistant's text and the tool outputs of the sources the import read since the last sync.

        Read through the plugin that claims each source (``conversation_items``), redacted by the events'
        redactor whatever the import's settings. A source whose recorded size grew is read on from where
        the last sync stopped (complete lines only); one that shrank or was rewritten is read again whole.
        Prompts and tool inputs come from the traces (above), with their seqs. A source whose rows the
        import's workers ``handed`` over, read from where the index stopped, is not read again: its rows
        are keyed and inserted in its place in the order, so the index is the one the reading makes.
        """
        from rematch_trace.store.ledger import Ledger

        if not data.ledger.exists():
            return
        # Two passes over the ledger's sessions, a source at a time: the first finds the sources to read, the
        # second stores each source in its place in the order. Neither holds every session's row (an archive's
        # worth of them): the memory of a sync stays flat in the number of files.
        heads: set[str] = set()
        with Ledger(data.ledger, readonly=True) as ledger:
            todo: list[SourceTask] = []
            for path, rows in _source_groups(ledger):
                plan = self._plan_source(path, rows, only, handed)
                if plan is not None and not plan[1]:
                    # The claim the import kept for each source (its saved state): the reading asks no plugin's
                    # detect_source again while what detection saw still holds (importing.worker.kept_source).
                    todo.append((*plan[0][:6], ledger.saved_of(path)))
            # No reader in this process (live capture's writer): the sources not handed over are left for a
            # sync that has one (`rematch search`, `import`, `report`), unrecorded so that it reads them.
            reading = bool(todo and _READERS)
            read = _READERS[0](todo, jobs) if reading else iter(())
            del todo
            for path, rows in _source_groups(ledger):
                plan = self._plan_source(path, rows, only, handed)
                if plan is None:
                    continue
                task, given = plan
                if not given and not reading:
                    continue
                taken = handed.take(path) if given and handed is not None else None
                if taken is None:
                    got = next(read)
                else:
                    # The import's own reading: its rows keyed here, as _source_rows keys what it reads
                    # (taken one source at a time: an archive's rows are never all in memory).
                    got = (keyed(taken[2], task[3], task[4], task[5]), taken[1], task[3], taken[3])
                self._store_source(path, rows, (rows[0]["source_size"], rows[0]["source_mtime_ns"]), task[2], got,
                                   figures, heads)
        for _ in read:
            raise AssertionError("a source read and not stored")
        if heads:
            self.db.execute("CREATE TEMP TABLE IF NOT EXISTS said (key TEXT PRIMARY KEY)")
            self.db.execute("DELETE FROM said")
            self.db.executemany("INSERT OR IGNORE INTO said VALUES (?)", [(k,) for k in heads])
            ids = [(r[0],) for r in self.db.execute(
                "SELECT id FROM spans WHERE src IS NULL AND key IN (SELECT key FROM said)")]
            self.db.executemany("DELETE FROM text WHERE rowid = ? AND kind = 'assistant'", ids)

    def _plan_source(self, path: str, rows: list[dict[str, Any]], only: set[str] | None,
                     handed: HandedRows | None) -> tuple[SourceTask, bool] | None:
        """What a sync does with one source: ``None`` when it is left as it is (not asked for, or unchanged
        since indexed), else its reading's task and whether the import's workers handed its rows over."""
        if only is not None and not any(r["key"] in only for r in rows):
            return None
        stamp = (rows[0]["source_size"], rows[0]["source_mtime_ns"])
        old = self.db.execute("SELECT path, size, mtime_ns, end_off, streams FROM sources WHERE path = ?",
                              (path,)).fetchone()
        if old is not None and (old[1], old[2]) == stamp:
            return None
        compressed = not path.endswith(".jsonl")
        start = int(old[3]) if old is not None and not compressed and stamp[0] >= old[1] else 0
        streams: dict[str, str] = orjson.loads(old[4]) if old is not None and start else {}
        by_id = {r["session_id"]: r["key"] for r in rows}
        main = next((r["key"] for r in rows if r["agent_kind"] == "main"), rows[0]["key"])
        task: SourceTask = (path, rows[0]["harness"], start, streams, by_id, main, None)
        # Rows the import read from where the index stopped are taken; one it read from elsewhere
        # (a continuation the import restarted whole, an index made anew) is read here, as before.
        return task, handed is not None and handed.start_of(path) == start

    def _store_source(self, path: str, rows: list[dict[str, Any]], stamp: tuple[int, int], start: int,
                      got: SourceRows, figures: SyncFigures, heads: set[str]) -> None:
        """Insert what :func:`_source_rows` read from one source, and record the source (unless it failed)."""
        found, end, streams, failed = got
        if not start:
            # Looked up first (spans_by_src): a source read for the first time has nothing to delete,
            # and an FTS5 delete, even of no row, flushes the terms pending in memory.
            gone = [(r[0],) for r in self.db.execute("SELECT id FROM spans WHERE src = ?", (path,))]
            if gone:
                self.db.executemany("DELETE FROM text WHERE rowid = ?", gone)
                self.db.execute("DELETE FROM spans WHERE src = ?", (path,))
        if found:
            # Each output's call seq, by key and call id, and each session's turns, which place the assistant's
            # texts: one query per session, not one per row.
            seqs: dict[tuple[str, str], int | None] = {}
            turns: dict[str, Turns] = {}
            for r in rows:
                seqs.update(((r["key"], c), q) for c, q in self.db.execute(
                    "SELECT call_id, seq FROM calls WHERE key = ?", (r["key"],)))
                turns[r["key"]] = Turns(self.db.execute("SELECT t, seq FROM turns WHERE key = ?", (r["key"],)))
            # Two executemany calls: the ids are known ahead (the pass holds the write lock
            # from BEGIN IMMEDIATE to COMMIT).
            first = int(self.db.execute("SELECT coalesce(max(id), 0) FROM spans").fetchone()[0]) + 1
            self.db.executemany("INSERT INTO spans (id, key, off, len, digest, src) VALUES (?,?,-1,0,x'',?)",
                                ((first + i, f[0], path) for i, f in enumerate(found)))
            self.db.executemany("INSERT INTO text (rowid, body, kind, seq, t) VALUES (?,?,?,?,?)",
                                ((first + i, f[4], f[1], _position(f, seqs, turns), f[3]) for i, f in enumerate(found)))
            figures.records += len(found)
            for f in found:
                if f[1] == "assistant" and f[0] not in self._conv:
                    # From now on this session's assistant text is the source's: the trace's heads go.
                    self._conv.add(f[0])
                    heads.add(f[0])
        if failed:
            return  # what it gave before failing is kept; the source is not recorded (read again next time)
        self.db.execute(
            """INSERT INTO sources (path, size, mtime_ns, end_off, streams) VALUES (?,?,?,?,?)
               ON CONFLICT(path) DO UPDATE SET size=excluded.size, mtime_ns=excluded.mtime_ns,
                   end_off=excluded.end_off, streams=excluded.streams""",
            (path, stamp[0], stamp[1], end, orjson.dumps(streams).decode()))

    def started(self) -> dict[str, int | None]:
        """Trace key -> the session's start (ms), as its ``session_start`` record says."""
        return {r[0]: r[1] for r in self.db.execute("SELECT key, started FROM traces")}

    def search(self, query: str, *, keys: set[str] | None = None, kinds: Iterable[str] | None = None,
               limit: int = 20) -> list[Hit]:
        """The best ``limit`` hits of an FTS5 ``query`` (bm25 order), in the traces ``keys`` and of the
        :data:`~rematch_trace.store.search_kinds.KINDS` ``kinds`` if given."""
        # ORDER BY rank (FTS5's bm25, the same figure as bm25(text)), not by bm25(text): FTS5 then ranks the
        # matches itself and the outer query makes the snippet, and joins, only for the rows it returns; by
        # bm25(text) every match had its snippet made before SQLite sorted them (a common word: most of the time).
        sql = ("SELECT s.key, tr.session_id, x.seq, x.kind, x.t, snippet(text, 0, char(2), char(3), '…', 16), "
               "x.rank FROM text x JOIN spans s ON s.id = x.rowid LEFT JOIN traces tr ON tr.key = s.key "
               "WHERE text MATCH ?")
        params: list[Any] = [query]
        if keys is not None:
            self.db.execute("CREATE TEMP TABLE IF NOT EXISTS chosen (key TEXT PRIMARY KEY)")
            self.db.execute("DELETE FROM chosen")
            self.db.executemany("INSERT OR IGNORE INTO chosen VALUES (?)", [(k,) for k in keys])
            sql += " AND s.key IN (SELECT key FROM chosen)"
        if kinds is not None:
            chosen = sorted(set(kinds))
            sql += f" AND x.kind IN ({','.join('?' * len(chosen))})"
            params.extend(chosen)
        sql += " ORDER BY x.rank LIMIT ?"
        params.append(limit)
        return [Hit(r[0], r[1], r[2], r[3], r[4], r[5] or "", float(r[6])) for r in self.db.execute(sql, params)]

    def size(self) -> tuple[int, int]:
        """How many traces and records the index holds."""
        traces = int(self.db.execute("SELECT count(*) FROM traces").fetchone()[0])
        records = int(self.db.execute("SELECT count(*) FROM spans").fetchone()[0])
        return traces, records


#: One source to read: its path, harness, start offset, stream -> key map so far, session id -> key, main key,
#: and the import's saved state of it (encoded), if any.
SourceTask = tuple[str, str, int, dict[str, str], dict[str, str], str, bytes | None]
#: What one source gave: rows ``(key, kind, call_id, t, body)``, the end offset, the streams, whether it failed.
SourceRows = tuple[list[tuple[str, str, str | None, int | None, str]], int, dict[str, str], bool]
#: Reads the sources a sync must index (``(tasks, jobs) -> one result per task, in order``): registered by
#: the driver that knows how to read a source (importing/search_sources.py); the store reads none itself.
SourceReader = Callable[[list[SourceTask], int], Iterator[SourceRows]]
_READERS: list[SourceReader] = []


def register_source_reader(reader: SourceReader) -> None:
    """Make ``reader`` the one a sync uses to read the sources it indexes (the last registered wins)."""
    _READERS[:] = [reader]


def _position(row: tuple[str, str, str | None, int | None, str], calls: Mapping[tuple[str, str], int | None],
              turns: Mapping[str, Turns]) -> int | None:
    """The seq a source row is found at: an output's, its call's; an assistant text's, its turn's."""
    key, kind, call, t, _ = row
    if call is not None:
        return calls.get((key, call))
    placed = turns.get(key)
    return placed.seq_at(t) if kind == "assistant" and placed is not None else None


def keyed(said: list[SaidRow], streams: dict[str, str], by_id: Mapping[str, str],
           main: str) -> list[tuple[str, str, str | None, int | None, str]]:
    """``said``'s rows with each stream's trace key in place of the stream (``streams`` updated as they open);
    rows of a stream that names no session of the ledger's are left out."""
    found: list[tuple[str, str, str | None, int | None, str]] = []
    for stream, kind, call, t, body in said:
        if kind == "session":
            streams[stream] = by_id.get(call or "", "")
            continue
        key = streams.get(stream, main if stream == "" else "")
        if key:
            found.append((key, kind, call, t, body))
    return found


def _source_groups(ledger: Any) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Each source path the ledger's sessions name, with those sessions' rows (and their trace ``key``), in
    path order; a row without a safe trace key or a source path is left out."""
    from rematch_trace.store.datafolder import key_of

    cursor = ledger.db.execute("SELECT harness, session_id, agent_kind, source_path, source_size, "
                               "source_mtime_ns, trace_path FROM sessions ORDER BY source_path, trace_path")
    for path, same in itertools.groupby(cursor, key=lambda row: row["source_path"]):
        rows = []
        for row in same:
            r = dict(row)
            r["key"] = key_of(r)
            if r["key"] is not None and isinstance(path, str) and path:
                rows.append(r)
        if rows:
            yield path, rows


def _raw_keys(data: DataDir) -> set[str]:
    """The trace keys whose ledger row says they were written without redaction (or does not say)."""
    from rematch_trace.store.datafolder import key_of
    from rematch_trace.store.ledger import Ledger

    if not data.ledger.exists():
        return set()
    out = set()
    with Ledger(data.ledger, readonly=True) as ledger:
        for row in ledger.db.execute("SELECT trace_path, settings, mode FROM sessions"):
            settings = row["settings"] or ""
            if "redact=1" in settings or (row["mode"] == "live" and not settings):
                continue  # written redacted (a live capture always redacts what it keeps)
            key = key_of(dict(row))
            if key is not None:
                out.add(key)
    return out


class QueryError(ValueError):
    """A query that asks for nothing to be found (only words to leave out)."""


def _terms(text: str) -> list[tuple[str, bool, bool, bool]]:
    """``text`` cut into terms: (text, quoted, left out with ``-``, a prefix with ``*``)."""
    out: list[tuple[str, bool, bool, bool]] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        minus = text[i] == "-" and i + 1 < n and not text[i + 1].isspace()
        j = i + 1 if minus else i
        if text[j] == '"':
            end = text.find('"', j + 1)
            end = n if end < 0 else end  # an unclosed quote runs to the end
            phrase = text[j + 1:end]
            i = end + 1
            star = i < n and text[i] == "*"
            i += star
            if phrase.strip():
                out.append((phrase, True, minus, star))
            continue
        end = j
        while end < n and not text[end].isspace() and text[end] != '"':
            end += 1
        word = text[j:end]
        i = end
        star = len(word) > 1 and word.endswith("*")
        out.append((word[:-1] if star else word, False, minus, star))
    return out


def to_query(text: str) -> str:
    """A user's words as an FTS5 query: each word, or each ``"quoted phrase"``, must occur (any order).

    What a user types is never FTS5 syntax: every term is quoted, so FTS5's operators and punctuation are
    text. Three forms are read, and written as FTS5's own: ``word*`` (and ``"a phrase"*``) matches words
    that begin so; ``OR`` (upper case, between two terms) matches either; ``-word`` (and ``-"a phrase"``)
    leaves out the records that hold it. ``OR`` anywhere else is the word itself. A query of nothing but
    terms left out raises :class:`QueryError`.
    """
    # A term without a letter or digit is no token to FTS5's tokenizer (an empty phrase, which FTS5
    # refuses beside a parenthesised group): it asks for nothing, so it is dropped.
    terms = [t for t in _terms(text) if any(c.isalnum() for c in t[0])]
    groups: list[list[str]] = []  # OR-ed alternatives, each group ANDed with the next
    left_out: list[str] = []
    joined = False  # the last term was OR, between two terms
    for k, (term, quoted, minus, star) in enumerate(terms):
        fts = '"' + term.replace('"', '""') + '"' + ("*" if star else "")
        if minus:
            left_out.append(fts)
            joined = False
            continue
        is_or = term == "OR" and not quoted and not star
        if is_or and groups and not joined and k + 1 < len(terms) and not terms[k + 1][2]:
            joined = True
            continue
        if joined:
            groups[-1].append(fts)
        else:
            groups.append([fts])
        joined = False
    if not groups:
        if left_out:
            raise QueryError("say what to find, not only what to leave out (-word)")
        return ""
    # AND spelt out: FTS5 reads juxtaposition as AND between phrases, not beside a parenthesised group.
    query = " AND ".join(g[0] if len(g) == 1 else "(" + " OR ".join(g) + ")" for g in groups)
    if left_out:
        query = f"({query}) NOT " + (left_out[0] if len(left_out) == 1 else "(" + " OR ".join(left_out) + ")")
    return query


def sync_data(data: DataDir, only: set[str] | None = None, jobs: int = 1,
              handed: HandedRows | None = None) -> SyncFigures | None:
    """Sync the data folder's index (made if missing); ``None`` when it cannot be written (said by the caller).

    ``jobs``: worker processes reading the source transcripts (the import's ``--jobs``); ``handed``: the
    rows the import's workers read with them (:meth:`SearchIndex.sync`).
    """
    try:
        with SearchIndex(index_path(data)) as index:
            return index.sync(data, only, jobs, handed)
    except (OSError, sqlite3.Error):
        return None


def hits_iter(index: SearchIndex, query: str, keys: set[str] | None, limit: int,
              kinds: Iterable[str] | None = None) -> Iterator[Hit]:
    """:meth:`SearchIndex.search`, a bad query (FTS5 syntax) raising ``ValueError`` with SQLite's words."""
    try:
        yield from index.search(query, keys=keys, kinds=kinds, limit=limit)
    except sqlite3.OperationalError as err:
        raise ValueError(str(err)) from None
