"""The ledger: what was imported from where, in SQLite inside the data folder.

One row per source file (its size, mtime and fingerprints, the byte offset
reached, the outcome and the state to resume from) and one row per session
(where its outputs are, its flags and the seqs behind them, its domain).
Migrations are versioned by ``PRAGMA user_version``.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    # Loaded where they are used: planning an unchanged rerun reads the ledger without them.
    from rematch_trace.store.rows import SessionRow, SourceRow

# Each migration takes the schema from its index to the next version.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE sources (
        path TEXT PRIMARY KEY,
        harness TEXT,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        head_fp TEXT,
        tail_fp TEXT,
        offset INTEGER NOT NULL DEFAULT 0,
        outcome TEXT NOT NULL,
        reason TEXT,
        malformed INTEGER NOT NULL DEFAULT 0,
        problems INTEGER NOT NULL DEFAULT 0,
        saved BLOB,
        imported_at INTEGER NOT NULL
    );
    CREATE TABLE sessions (
        harness TEXT NOT NULL,
        session_id TEXT NOT NULL,
        agent_kind TEXT NOT NULL,
        source_path TEXT NOT NULL,
        source_size INTEGER NOT NULL,
        source_mtime_ns INTEGER NOT NULL,
        fingerprint TEXT,
        offset INTEGER NOT NULL,
        trace_path TEXT NOT NULL,
        events_path TEXT,
        flagged INTEGER NOT NULL,
        reasons TEXT NOT NULL,
        redirect_seqs TEXT NOT NULL,
        error_cluster_seqs TEXT NOT NULL,
        mark_seqs TEXT NOT NULL,
        PRIMARY KEY (harness, session_id)
    );
    CREATE INDEX sessions_by_source ON sessions(source_path);
    """,
    """
    ALTER TABLE sessions ADD COLUMN domain TEXT;
    ALTER TABLE sessions ADD COLUMN cwd TEXT;
    ALTER TABLE sessions ADD COLUMN repo TEXT;
    ALTER TABLE sessions ADD COLUMN repo_remote TEXT;
    ALTER TABLE sessions ADD COLUMN counts TEXT;
    """,
    # Every flag reason's seqs in one JSON object: a new reason needs no migration.
    """
    ALTER TABLE sessions ADD COLUMN seqs TEXT;
    """,
    # How the session's trace was written: 'import' (from its transcript) or
    # 'live' (from hooks as it ran; an import of its transcript then leaves it).
    """
    ALTER TABLE sessions ADD COLUMN mode TEXT NOT NULL DEFAULT 'import';
    """,
    # Planning reads every source's brief row in path order. The table stores imported_at
    # after the saved state, whose overflow pages SQLite walks to reach it: an index that
    # holds the brief columns is read alone, in order, whatever the saved states weigh.
    """
    CREATE INDEX sources_brief ON sources(path, harness, size, mtime_ns, head_fp, tail_fp, offset, outcome, imported_at);
    """,
    # No table changes: a saved state may now leave the synthesizer's held run in the trace
    # (its count in ``held``). A rematch from before would continue such a state without the
    # held records, so the version moves and an earlier rematch refuses the folder, saying why.
    """
    -- saved states: the held run read back from the trace
    """,
    # The settings each row's outputs were made with (ImportSettings.outputs_key: redaction,
    # events, rule versions): a rerun under other settings redoes the rows they change. In the
    # planning index, so that the check reads no saved state and opens no file. Rows from
    # before hold NULL: made under settings nobody recorded, so the next import redoes them once.
    """
    ALTER TABLE sources ADD COLUMN settings TEXT;
    ALTER TABLE sessions ADD COLUMN settings TEXT;
    DROP INDEX sources_brief;
    CREATE INDEX sources_brief ON sources(path, harness, size, mtime_ns, head_fp, tail_fp, offset, outcome, imported_at, settings);
    """,
    # Each session's summary (report/summary.py) beside its row, with what it was made from (the
    # trace's and events' size and mtime, the prices' digest): written when the session's outputs
    # are, so ``flagged``, ``sessions`` and ``stats`` read summaries, not traces. NULL: not made
    # yet, or made stale by a change of the row (a new domain); the next writer or reader makes it.
    """
    ALTER TABLE sessions ADD COLUMN summary TEXT;
    """,
    # The session that started each one (a subagent's, sidechain's or compaction run's main
    # session), so that commands group sessions from their rows and summaries alone. Rows from
    # before are filled in by :func:`_fill_parents` as the migration runs: from the id for Claude
    # Code (``<parent>.agent-…``, ``<parent>.sidechain-N``), else from the source's saved state,
    # which kept each stream's session record; no file is read again. Stored summaries stay:
    # their parent is added without reading the trace (report/summary.py ``upgrade``).
    """
    ALTER TABLE sessions ADD COLUMN parent TEXT;
    """,
    # pi had no harness name of its own (rematch-pi): its sessions were claimed as omp's. Every
    # source claimed as omp is read again once (settings 'claim=again', which no run writes): the
    # plugins now give each file to the harness that wrote it, and a source whose sessions come
    # back as pi's has its omp rows forgotten, their outputs replaced (batch._record). A session
    # captured live keeps its row: nothing recorded says whether the extension that sent it (as
    # 'omp', for both) ran in pi or omp, so it stays as it is (docs/trace-schema.md, Decisions).
    """
    UPDATE sources SET settings = 'claim=again' WHERE harness = 'omp';
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)
#: The schema version whose migration adds ``sessions.parent`` (rows before it are filled in then).
PARENT_VERSION = 9
#: The page size of a new ledger.
PAGE_SIZE = 8192
#: The columns of a source row that planning reads: those of the index ``sources_brief``.
_BRIEF = "path, harness, size, mtime_ns, head_fp, tail_fp, offset, outcome, imported_at, settings"


def _decoded(row: sqlite3.Row | dict[str, Any]) -> dict[str, Any]:
    """A session row as a dict, its JSON columns decoded."""
    d = dict(row)
    for key in ("reasons", "redirect_seqs", "error_cluster_seqs", "mark_seqs", "counts"):
        d[key] = orjson.loads(d[key]) if d.get(key) else ([] if key != "counts" else {})
    # Rows written before the seqs column hold the three first reasons' seqs only.
    d["seqs"] = orjson.loads(d["seqs"]) if d.get("seqs") else {
        "redirect": d["redirect_seqs"], "error_cluster": d["error_cluster_seqs"], "mark": d["mark_seqs"]
    }
    d["flagged"] = bool(d["flagged"])
    return d


def _column(name: str) -> str:
    """``name`` as a column to select: a plain identifier only (never text spliced into SQL)."""
    if not name.isidentifier() or not name.isascii():
        raise ValueError(f"not a column name: {name!r}")
    return name


def decoded(row: dict[str, Any]) -> dict[str, Any]:
    """A row of :meth:`Ledger.sessions_raw` decoded as :meth:`Ledger.sessions` gives it (a new dict)."""
    return _decoded(row)


def as_stored(value: Any) -> Any:
    """``value`` as the ledger stores it: a string's lone surrogates spelled as backslash escapes."""
    if type(value) is str and not value.isascii():
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def open_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection to an existing ledger, also in a folder nobody may write.

    ``mode=ro`` first: it still sees an import committing meanwhile. A WAL database
    needs its ``-shm`` file, which SQLite cannot create in a read-only folder; there
    no process can be writing, so the file is opened as immutable (no locks at all).
    """
    if path.is_symlink():  # SQLite would make its -wal and -shm files beside the target, wherever it is
        raise sqlite3.OperationalError(f"{path} is a symbolic link; a ledger is read only where it is")
    if not path.is_file():
        raise sqlite3.OperationalError(f"no ledger at {path}")
    uri = path.resolve().as_uri()
    db = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=30, isolation_level=None)
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.OperationalError:
        db.close()
    return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)


def _fill_parents(ledger: Ledger) -> None:
    """Fill in ``sessions.parent`` of the subagent rows recorded before the column existed.

    Claude Code names a subagent, sidechain or compaction run ``<parent id>.<suffix>``; other
    harnesses' parents are read from the source's saved state (each stream's session record keeps
    ``parent_session_id``). Only ``sub`` rows are looked at, so the cost follows their number; a
    state that cannot be read leaves the row's parent unknown (listed as an orphan until its file
    is imported again).
    """
    ledger._q("UPDATE sessions SET parent = substr(session_id, 1, instr(session_id, '.') - 1) "
              "WHERE agent_kind = 'sub' AND parent IS NULL AND harness = 'claude_code' AND instr(session_id, '.') > 1")
    rows = ledger._q("SELECT x.harness, x.session_id, s.saved FROM sessions x JOIN sources s ON s.path = x.source_path "
                     "WHERE x.agent_kind = 'sub' AND x.parent IS NULL AND s.saved IS NOT NULL").fetchall()
    from rematch_trace.store.states import state_loads

    for harness, session_id, saved in rows:
        try:
            state = state_loads(bytes(saved))
        except Exception:  # a damaged state costs its row's parent, never the migration
            continue
        streams = state.get("streams") if isinstance(state, dict) else None
        for stream in streams.values() if isinstance(streams, dict) else ():
            session = stream.get("session") if isinstance(stream, dict) else None
            if not isinstance(session, dict) or session.get("session_id") != session_id:
                continue
            parent = session.get("parent_session_id")
            if isinstance(parent, str) and parent and parent != session_id:
                ledger._q("UPDATE sessions SET parent = ? WHERE harness = ? AND session_id = ?",
                          (parent, harness, session_id))
            break
    # Stored summaries of version 3 differ from version 4 by ``parent`` alone: given it here, in
    # place, so that no trace is read again for it (report/summary.py, SUMMARY_VERSION).
    ledger._q("UPDATE sessions SET summary = json_set(summary, '$.summary.parent', "
              "CASE WHEN parent IS NOT NULL AND parent != session_id THEN parent END, '$.summary.version', 4) "
              "WHERE json_valid(summary) AND json_extract(summary, '$.summary.version') = 3")


class Ledger:
    """An open ledger. Use as a context manager; writes commit per call."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        """Open (creating and migrating) the ledger at ``path``; with ``readonly``, only read it.

        A read-only ledger is never created, migrated or written, so it can be read
        in a folder the user cannot write (see :func:`open_readonly`).
        """
        self.path = path
        self.readonly = readonly
        #: The settings key (:attr:`ImportSettings.outputs_key`) written on the rows this ledger records.
        self.settings_key: str | None = None
        if readonly:
            self.db = open_readonly(path)
            self.db.row_factory = sqlite3.Row
            return
        # Created private first: SQLite gives its -wal and -shm files the database's mode.
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600))
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        # A new ledger only (an existing one keeps its page size): a saved state of 2-12 KB then
        # fits its row's page, where 4 KiB pages spread it over overflow pages that each
        # continuation frees and allocates again (rewriting a grown file's row costs about a
        # third less).
        self._q(f"PRAGMA page_size={PAGE_SIZE}")
        self._q("PRAGMA journal_mode=WAL")
        self._q("PRAGMA synchronous=NORMAL")
        self.migrate()

    def _q(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        """Execute with every text parameter made valid UTF-8 (SQLite refuses lone surrogates,
        which undecodable file names and hostile ids carry)."""
        # Inline, not a call per parameter: a continued file's two rows pass 35 of them.
        return self.db.execute(sql, [p if type(p) is not str or p.isascii() else as_stored(p) for p in params])

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    @property
    def version(self) -> int:
        """The schema version the file is at."""
        return int(self._q("PRAGMA user_version").fetchone()[0])

    def migrate(self) -> None:
        """Apply every migration the file has not had, each in its own transaction."""
        current = self.version
        if current > SCHEMA_VERSION:
            raise sqlite3.DatabaseError(
                f"at schema {current}, newer than this rematch ({SCHEMA_VERSION}): a later rematch wrote it; upgrade rematch"
            )
        for i in range(current, SCHEMA_VERSION):
            with self._transaction():
                for stmt in MIGRATIONS[i].split(";"):
                    if stmt.strip():
                        self._q(stmt)
                if i + 1 == PARENT_VERSION:
                    _fill_parents(self)
                self._q(f"PRAGMA user_version={i + 1}")

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """A write transaction committed at the block's end, rolled back if it raises; inside a transaction
        the caller opened (:meth:`begin`), the block joins it and the caller commits."""
        own = not self.db.in_transaction
        if own:
            self._q("BEGIN IMMEDIATE")
        try:
            yield
            if own:
                self._q("COMMIT")
        except BaseException:
            # SQLite has already rolled back after some failures (a full disk).
            if own and self.db.in_transaction:
                self._q("ROLLBACK")
            raise

    def source(self, path: str) -> dict[str, Any] | None:
        """The row of a source file, with ``saved`` decoded."""
        row = self._q("SELECT * FROM sources WHERE path = ?", (path,)).fetchone()
        if row is None:
            return None
        from rematch_trace.store.states import state_loads

        d = dict(row)
        d["saved"] = state_loads(d["saved"]) if d["saved"] else None
        return d

    def sources(self) -> Iterator[dict[str, Any]]:
        """Every source row (``saved`` left encoded)."""
        for row in self._q("SELECT * FROM sources ORDER BY path"):
            yield dict(row)

    def sources_brief(self) -> Iterator[sqlite3.Row]:
        """Every source row in path order, without its saved state (:meth:`continuation_of` reads it).

        Planning reads this for every file of an archive, from the index that holds
        these columns: the saved states, up to hundreds of KB each, are read one at
        a time, and only for files that grew.
        """
        yield from self._q(f"SELECT {_BRIEF} FROM sources ORDER BY path")

    def source_brief(self, path: str) -> sqlite3.Row | None:
        """One source's row as :meth:`sources_brief` gives it, or ``None``."""
        row: sqlite3.Row | None = self._q(f"SELECT {_BRIEF} FROM sources WHERE path = ?", (path,)).fetchone()
        return row

    def saved_of(self, path: str) -> bytes | None:
        """The encoded saved state of one source, if any."""
        return self.continuation_of(path)[3]

    def continuation_of(
        self, path: str
    ) -> tuple[set[tuple[str, str]], str | None, str | None, bytes | None]:
        """What continuing a source needs, in one query: the (harness, session id) of its sessions
        (as :meth:`session_keys_of`), its head and tail fingerprints and its encoded saved state."""
        rows = self._q(
            "SELECT s.head_fp, s.tail_fp, s.saved, x.harness, x.session_id FROM sources s "
            "LEFT JOIN sessions x ON x.source_path = s.path WHERE s.path = ?", (path,),
        ).fetchall()
        if not rows:
            return self.session_keys_of(path), None, None, None
        head, tail, saved = rows[0][0], rows[0][1], rows[0][2]
        keys = {(r[3], r[4]) for r in rows if r[4] is not None}
        return keys, head, tail, bytes(saved) if saved else None

    def session_keys_of(self, path: str) -> set[tuple[str, str]]:
        """The (harness, session id) of the sessions a source produced."""
        return {(r[0], r[1]) for r in self._q("SELECT harness, session_id FROM sessions WHERE source_path = ?", (path,))}

    def session_source(self, harness: str, session_id: str) -> sqlite3.Row | None:
        """Which source a session was recorded from, and how much that source held."""
        row: sqlite3.Row | None = self._q(
            "SELECT source_path, source_size, counts, flagged, reasons FROM sessions "
            "WHERE harness = ? AND session_id = ?",
            (harness, session_id),
        ).fetchone()
        return row

    def imported_under(self, roots: Sequence[str]) -> int:
        """How many imported sources are ``roots`` or lie under them (roots inside another count once)."""
        tops = sorted({r.rstrip("/") or "/" for r in roots})
        tops = [t for t in tops if not any(t.startswith(o.rstrip("/") + "/") for o in tops if o != t)]
        n = 0
        for top in tops:
            # A range on the primary key: "0" is the character after "/".
            low, high = top.rstrip("/") + "/", top.rstrip("/") + "0"
            n += int(self._q(
                "SELECT count(*) FROM sources WHERE outcome IN ('imported', 'resumed') "
                "AND (path = ? OR (path >= ? AND path < ?))", (top, low, high),
            ).fetchone()[0])
        return n

    def totals(self) -> tuple[int, int]:
        """How many sessions the ledger holds, and how many of them are flagged."""
        row = self._q("SELECT count(*), coalesce(sum(flagged), 0) FROM sessions").fetchone()
        return int(row[0]), int(row[1])

    def source_count(self, at_most: int) -> int:
        """How many source rows the ledger holds, counted up to ``at_most`` (a bounded cost)."""
        row = self._q("SELECT count(*) FROM (SELECT 1 FROM sources LIMIT ?)", (at_most,)).fetchone()
        return int(row[0])

    def record_source(
        self, row: SourceRow, sessions: Sequence[SessionRow] = (), forget: Sequence[tuple[str, str]] = ()
    ) -> None:
        """Record a source's outcome and, in the same transaction, its sessions.

        ``forget`` names (harness, session id) rows the source no longer produces.
        """
        with self._transaction():  # (inside the caller's batch, begin, the caller commits)
            self._write_source(row, sessions, forget)

    def begin(self) -> None:
        """Open a transaction that the following :meth:`record_source` calls join (unless one is open)."""
        if not self.db.in_transaction:
            self._q("BEGIN IMMEDIATE")

    def commit(self) -> None:
        """Commit the open transaction, if any."""
        if self.db.in_transaction:
            self._q("COMMIT")

    def _write_source(
        self, r: SourceRow, sessions: Sequence[SessionRow], forget: Sequence[tuple[str, str]]
    ) -> None:
        self._q(
            """INSERT INTO sources (path, harness, size, mtime_ns, head_fp, tail_fp, offset, outcome,
                   reason, malformed, problems, saved, imported_at, settings)
               VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)
               ON CONFLICT(path) DO UPDATE SET harness=excluded.harness, size=excluded.size,
                   mtime_ns=excluded.mtime_ns, head_fp=excluded.head_fp, tail_fp=excluded.tail_fp,
                   offset=excluded.offset, outcome=excluded.outcome, reason=excluded.reason,
                   malformed=excluded.malformed, problems=excluded.problems, saved=excluded.saved,
                   imported_at=excluded.imported_at, settings=excluded.settings""",
            (r.path, r.harness, r.size, r.mtime_ns, r.head_fp, r.tail_fp, r.offset, r.outcome, r.reason,
             # To the microsecond (a REAL in the INTEGER column; older rows hold whole seconds): the change
             # check tells a file written just before its import from one written after it (changes.racy).
             r.malformed, r.problems, r.saved or None, round(time.time(), 6), self.settings_key),
        )
        for harness_, sid in forget:
            # Only while it is still this source's: another file's copy may have taken it meanwhile.
            self._q("DELETE FROM sessions WHERE harness = ? AND session_id = ? AND source_path = ?",
                    (harness_, sid, r.path))
        for s in sessions:
            self._session_row(r, s, "import")

    def _session_row(self, r: SourceRow, s: SessionRow, mode: str) -> None:
        # An update in place when the row is there (a continued session, mostly): a replace would
        # delete and insert it, rewriting both of its index entries.
        self._q(
            """INSERT INTO sessions (harness, session_id, agent_kind, source_path,
                   source_size, source_mtime_ns, fingerprint, offset, trace_path, events_path,
                   flagged, reasons, redirect_seqs, error_cluster_seqs, mark_seqs, domain, cwd,
                   repo, repo_remote, counts, seqs, mode, settings, parent, summary)
               VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
               ON CONFLICT(harness, session_id) DO UPDATE SET agent_kind=excluded.agent_kind,
                   source_path=excluded.source_path, source_size=excluded.source_size,
                   source_mtime_ns=excluded.source_mtime_ns, fingerprint=excluded.fingerprint,
                   offset=excluded.offset, trace_path=excluded.trace_path, events_path=excluded.events_path,
                   flagged=excluded.flagged, reasons=excluded.reasons, redirect_seqs=excluded.redirect_seqs,
                   error_cluster_seqs=excluded.error_cluster_seqs, mark_seqs=excluded.mark_seqs,
                   domain=excluded.domain, cwd=excluded.cwd, repo=excluded.repo,
                   repo_remote=excluded.repo_remote, counts=excluded.counts, seqs=excluded.seqs,
                   mode=excluded.mode, settings=excluded.settings, parent=excluded.parent,
                   summary=excluded.summary""",
            (
                r.harness, s.session_id, s.agent_kind, r.path, r.size, r.mtime_ns, r.head_fp, r.offset,
                s.trace_path, s.events_path, int(s.flagged),
                orjson.dumps(s.reasons).decode(),
                orjson.dumps(s.seqs.get("redirect", [])).decode(),
                orjson.dumps(s.seqs.get("error_cluster", [])).decode(),
                orjson.dumps(s.seqs.get("mark", [])).decode(),
                s.domain, s.cwd, s.repo, s.repo_remote,
                orjson.dumps(s.counts).decode(),
                orjson.dumps(s.seqs, option=orjson.OPT_SORT_KEYS).decode(),
                mode, self.settings_key if mode == "import" else None, s.parent, s.summary,
            ),
        )

    def record_live_session(self, harness: str, source_path: str, session: SessionRow) -> None:
        """Record a session captured live (``mode = 'live'``); ``source_path`` is its transcript.

        No source row is written: the transcript is still imported as usual,
        and that import leaves this session's trace and row to the live capture.
        """
        from rematch_trace.store.rows import SourceRow

        try:
            st = os.stat(source_path)
            size, mtime_ns = st.st_size, st.st_mtime_ns
        except (OSError, ValueError):
            size, mtime_ns = 0, 0
        with self._transaction():
            self._session_row(SourceRow(source_path, harness, size, mtime_ns, "live"), session, "live")

    def sessions(self, *, flagged: bool | None = None) -> list[dict[str, Any]]:
        """Session rows, decoded, ordered by harness and id."""
        sql = "SELECT * FROM sessions"
        if flagged is not None:
            sql += f" WHERE flagged = {int(flagged)}"
        return [_decoded(row) for row in self._q(sql + " ORDER BY harness, session_id")]

    def sessions_raw(self, columns: Sequence[str] = ()) -> list[dict[str, Any]]:
        """Session rows as stored, their JSON columns left as text (:func:`decoded` turns one into
        what :meth:`sessions` gives): readers of stored summaries decode only the rows they use.

        ``columns``: only these, all when empty; a name the table lacks (a ledger of an older schema,
        read before its migration) is left out of the rows.
        """
        have = {r[1] for r in self.db.execute("PRAGMA table_info(sessions)")} if columns else set()
        wanted = ", ".join(_column(c) for c in columns if c in have) or "*"
        cur = self.db.cursor()
        # Plain tuples zipped with the names: a sqlite3.Row looks each name up by comparing it,
        # case-insensitively, with every column's (most of a listing's time at thousands of rows).
        cur.row_factory = None
        cur.execute(f"SELECT {wanted} FROM sessions ORDER BY harness, session_id")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur]

    def sessions_row_raw(self, harness: str, session_id: str) -> dict[str, Any] | None:
        """One session's row as :meth:`sessions_raw` gives it, or ``None``."""
        row = self._q("SELECT * FROM sessions WHERE harness = ? AND session_id = ?", (harness, session_id)).fetchone()
        return None if row is None else dict(row)

    def session_row(self, harness: str, session_id: str) -> dict[str, Any] | None:
        """One session's row, decoded as :meth:`sessions` gives it, or ``None``."""
        row = self._q("SELECT * FROM sessions WHERE harness = ? AND session_id = ?", (harness, session_id)).fetchone()
        return None if row is None else _decoded(row)

    def summary_bases(self, version: int) -> Iterator[sqlite3.Row]:
        """(harness, session id, trace path, the stored summary's basis as JSON or ``None``) of every session;
        ``None`` too for a summary of another ``version`` than the reader's (it is made again).

        Rows, not tuples (the ledger's row factory): they unpack alike.

        The basis alone is read out of each summary (by SQLite): checking which summaries still
        hold costs no decoding of them.
        """
        yield from self._q("SELECT harness, session_id, trace_path, "
                           "CASE WHEN json_valid(summary) AND json_extract(summary, '$.summary.version') = ? "
                           "THEN json_extract(summary, '$.basis') END FROM sessions", (version,))

    def session_keys(self) -> dict[str, set[tuple[str, str]]]:
        """Source path -> the (harness, session id) of the sessions it produced, for every source."""
        out: dict[str, set[tuple[str, str]]] = {}
        for r in self._q("SELECT source_path, harness, session_id FROM sessions"):
            out.setdefault(r[0], set()).add((r[1], r[2]))
        return out

    def forget(self, harness: str, session_id: str) -> str | None:
        """Remove a session's row, and its source's row so that the next import reads that file again.

        Returns the source path the session was recorded from (``None``: no such row). The other
        sessions of that source keep their rows; the next import rewrites them with it.
        """
        self._q("BEGIN IMMEDIATE")
        try:
            row = self._q("SELECT source_path FROM sessions WHERE harness = ? AND session_id = ?",
                          (harness, session_id)).fetchone()
            if row is None:
                self._q("ROLLBACK")
                return None
            self._q("DELETE FROM sessions WHERE harness = ? AND session_id = ?", (harness, session_id))
            self._q("DELETE FROM sources WHERE path = ?", (row[0],))
            self._q("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                self._q("ROLLBACK")
            raise
        return str(row[0])

    def set_domain(self, harness: str, session_id: str, domain: str | None) -> None:
        """Store a session's decided domain."""
        self._q(
            "UPDATE sessions SET domain = ?, summary = NULL WHERE harness = ? AND session_id = ?",
            (domain, harness, session_id),
        )

    def set_summaries(self, summaries: Sequence[tuple[str, str, str | None]]) -> None:
        """Store (harness, session id, summary JSON) of sessions, in one transaction."""
        with self._transaction():
            for harness, session_id, summary in summaries:
                self._q("UPDATE sessions SET summary = ? WHERE harness = ? AND session_id = ?",
                        (summary, harness, session_id))
