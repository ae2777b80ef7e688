"""What each OTLP endpoint acknowledged: ``exports.sqlite`` in the data folder.

One row per (endpoint, harness, session): the trace's size and digest when its spans were last
acknowledged, the trace id they went under, and one 8-byte digest per trace line (in seq order),
so that a rerun sends only the spans of new or changed lines (``rematch export otlp``,
docs/otel.md). A row is written only after the endpoint acknowledged every span of the session:
nothing unacknowledged is ever recorded as sent.

A database of its own rather than a ledger table: it is written by the exporter alone, never
inside an import's transaction, and deleting it only makes the next export send everything again.
Migrations are versioned by ``PRAGMA user_version``, as the ledger's are.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

import attrs

#: The database's file name inside the data folder.
ACKS_NAME = "exports.sqlite"

#: Each migration takes the schema from its index to the next version.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE acked (
        endpoint TEXT NOT NULL,
        harness TEXT NOT NULL,
        session_id TEXT NOT NULL,
        trace_id TEXT NOT NULL,
        size INTEGER NOT NULL,
        digest BLOB NOT NULL,
        lines BLOB NOT NULL,
        acked_at INTEGER NOT NULL,
        PRIMARY KEY (endpoint, harness, session_id)
    );
    """,
    # How many session spans of the session the endpoint acknowledged (docs/otel.md, "a grown session"):
    # 0 while its span is held (not settled), then one more each time it grew and settled again.
    # A row from before: its one session span was sent.
    # root_digest: the trace's digest when the last of them was sent (its counts and end are that trace's).
    """
    ALTER TABLE acked ADD COLUMN roots INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE acked ADD COLUMN root_digest BLOB NOT NULL DEFAULT X'';
    UPDATE acked SET root_digest = digest;
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


@attrs.frozen
class Acked:
    """One session as an endpoint acknowledged it."""

    trace_id: str
    size: int
    digest: bytes
    #: One 8-byte digest per trace line, in seq order.
    lines: bytes
    #: How many session spans were acknowledged (0: the session's span is held until it settles).
    roots: int = 1
    #: The trace's digest when the last of them was sent (``b""``: none was).
    root_digest: bytes = b""


class AckBook:
    """The open acknowledgement database of a data folder. Use as a context manager."""

    def __init__(self, path: Path) -> None:
        """Open (creating, private, and migrating) the database at ``path``."""
        if path.is_symlink():  # SQLite would make its -wal and -shm files beside the target
            raise sqlite3.OperationalError(f"{path} is a symbolic link; refusing to follow it out of the data folder")
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600))
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self._migrate()

    def _migrate(self) -> None:
        current = int(self.db.execute("PRAGMA user_version").fetchone()[0])
        if current > SCHEMA_VERSION:
            raise sqlite3.DatabaseError(f"at schema {current}, newer than this rematch ({SCHEMA_VERSION}): upgrade rematch")
        for i in range(current, SCHEMA_VERSION):
            self.db.execute("BEGIN IMMEDIATE")
            try:
                for stmt in MIGRATIONS[i].split(";"):
                    if stmt.strip():
                        self.db.execute(stmt)
                self.db.execute(f"PRAGMA user_version={i + 1}")
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise

    def __enter__(self) -> AckBook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    def of_endpoint(self, endpoint: str) -> dict[tuple[str, str], Acked]:
        """Every session ``endpoint`` acknowledged, by (harness, session id)."""
        rows = self.db.execute("SELECT harness, session_id, trace_id, size, digest, lines, roots, root_digest FROM acked "
                               "WHERE endpoint = ?", (endpoint,))
        return {(h, s): Acked(t, int(n), bytes(d), bytes(ln), int(r), bytes(rd)) for h, s, t, n, d, ln, r, rd in rows}

    def get(self, endpoint: str, harness: str, session_id: str) -> Acked | None:
        """What ``endpoint`` acknowledged of one session, or ``None``."""
        row = self.db.execute("SELECT trace_id, size, digest, lines, roots, root_digest FROM acked WHERE endpoint = ? AND harness = ? "
                              "AND session_id = ?", (endpoint, harness, _text(session_id))).fetchone()
        return None if row is None else Acked(row[0], int(row[1]), bytes(row[2]), bytes(row[3]), int(row[4]),
                                                bytes(row[5]))

    def record(self, endpoint: str, done: Iterable[tuple[str, str, Acked]]) -> None:
        """Record (harness, session id, what was acknowledged) of sessions, in one transaction."""
        now = int(time.time())
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for harness, session_id, a in done:
                self.db.execute(
                    "INSERT INTO acked (endpoint, harness, session_id, trace_id, size, digest, lines, acked_at, roots, "
                    "root_digest) VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT(endpoint, harness, session_id) DO UPDATE SET "
                    "trace_id=excluded.trace_id, size=excluded.size, digest=excluded.digest, lines=excluded.lines, "
                    "acked_at=excluded.acked_at, roots=excluded.roots, root_digest=excluded.root_digest",
                    (endpoint, harness, _text(session_id), a.trace_id, a.size, a.digest, a.lines, now, a.roots,
                     a.root_digest))
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise


def _text(value: str) -> str:
    """``value`` as SQLite can store it (lone surrogates, which hostile ids carry, escaped)."""
    return value if value.isascii() else value.encode("utf-8", "backslashreplace").decode("utf-8")


def acks_path(root: Path) -> Path:
    """Where the acknowledgement database of the data folder ``root`` is."""
    return root / ACKS_NAME


__all__ = ["ACKS_NAME", "SCHEMA_VERSION", "AckBook", "Acked", "acks_path"]
