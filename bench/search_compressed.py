"""Issue 40's size target: ``search.sqlite`` with its stored text compressed, built from an index and compared.

    python bench/search_compressed.py DATA/search.sqlite /tmp/compressed.sqlite

Copies the index's tables into a new file where the text is kept once, zlib-compressed row by row (a row
of 64 bytes or more, when that is smaller), and FTS5 is an external-content table over a view that
inflates each row (``unz(body)``, a SQL function the connection registers). Prints what each part takes
(SQLite's ``dbstat``), the compression's CPU, and whether the query ``rematch search`` makes gives the same
hits, snippets and ranks on both files (and its CPU on each). An experiment: the index does not use this
layout (bench/README.md says why).
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
import zlib
from pathlib import Path

from rematch_trace.store.search_index import to_query

#: What ``SearchIndex.search`` asks (its SQL, without the filters).
QUERY = ("SELECT s.key, tr.session_id, x.seq, x.kind, x.t, snippet(text, 0, char(2), char(3), '…', 16), "
         "x.rank FROM text x JOIN spans s ON s.id = x.rowid LEFT JOIN traces tr ON tr.key = s.key "
         "WHERE text MATCH ? ORDER BY x.rank LIMIT ?")
QUERIES = ("error", "git status", "test failed", '"cannot find module"', "fix*", "npm OR yarn", "commit -amend",
           "def __init__ self", "the")


def unz(body: bytes | str | None) -> str | None:
    """A stored row's text: inflated when it was compressed."""
    return body if isinstance(body, str) or body is None else zlib.decompress(body).decode()


def build(src: Path, dst: Path) -> float:
    """The compressed layout of the index ``src`` written to ``dst``; the compression's CPU seconds."""
    dst.unlink(missing_ok=True)
    db = sqlite3.connect(dst, isolation_level=None)
    db.create_function("unz", 1, unz, deterministic=True)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("ATTACH ? AS s", (f"file:{src}?mode=ro",))
    db.execute("BEGIN")
    for table in ("traces", "spans", "sources", "calls", "turns"):
        db.execute(db.execute("SELECT sql FROM s.sqlite_master WHERE name = ?", (table,)).fetchone()[0])
        db.execute(f"INSERT INTO main.{table} SELECT * FROM s.{table}")
    for (sql,) in db.execute("SELECT sql FROM s.sqlite_master WHERE type = 'index' AND sql IS NOT NULL").fetchall():
        db.execute(sql)
    db.execute("CREATE TABLE bodies (id INTEGER PRIMARY KEY, body, kind TEXT, seq INTEGER, t INTEGER)")
    db.execute("CREATE VIEW text_rows AS SELECT id, unz(body) AS body, kind, seq, t FROM bodies")
    db.execute("CREATE VIRTUAL TABLE text USING fts5(body, kind UNINDEXED, seq UNINDEXED, t UNINDEXED, "
               "content='text_rows', content_rowid='id', tokenize = 'unicode61 remove_diacritics 2')")
    rows = db.execute("SELECT rowid, body, kind, seq, t FROM s.text").fetchall()
    spent = 0.0
    stored = []
    for rowid, body, kind, seq, t in rows:
        raw = body.encode()
        c = time.process_time()
        packed = zlib.compress(raw, 1) if len(raw) >= 64 else raw
        spent += time.process_time() - c
        stored.append((rowid, packed if len(packed) < len(raw) else body, kind, seq, t))
    db.executemany("INSERT INTO bodies VALUES (?,?,?,?,?)", stored)
    db.executemany("INSERT INTO text (rowid, body, kind, seq, t) VALUES (?,?,?,?,?)", rows)
    db.execute("COMMIT")
    db.execute("DETACH s")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return spent


def main() -> None:
    src, dst = Path(sys.argv[1]), Path(sys.argv[2])
    spent = build(src, dst)
    a = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
    b = sqlite3.connect(f"file:{dst}?mode=ro", uri=True)
    b.create_function("unz", 1, unz, deterministic=True)
    print(f"compressing: {spent:.1f} s of CPU; load average {os.getloadavg()[0]:.1f}")
    for name, db in (("stored", a), ("compressed", b)):
        parts = db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT 8").fetchall()
        size = (src if db is a else dst).stat().st_size
        print(f"{name}: {size / 1e6:.1f} MB; " + ", ".join(f"{n} {v / 1e6:.1f}" for n, v in parts))
    for q in QUERIES:
        fts = to_query(q)
        same = a.execute(QUERY, (fts, 200)).fetchall() == b.execute(QUERY, (fts, 200)).fetchall()
        cpu = []
        for db in (a, b):
            c = time.process_time()
            db.execute(QUERY, (fts, 20)).fetchall()
            cpu.append(time.process_time() - c)
        print(f"{q!r:22} same hits: {same}; CPU {cpu[0] * 1e3:.1f} ms stored, {cpu[1] * 1e3:.1f} ms compressed")


if __name__ == "__main__":
    main()
