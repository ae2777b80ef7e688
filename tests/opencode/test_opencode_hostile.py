"""Hostile opencode databases and Gemini CLI documents, through the real ``rematch`` CLI.

Each case failed before the reader was made safe: a ``part`` or ``session`` that is a VIEW over
an endless recursive query spun ``import`` (and ``report``, ``show --conversation`` of a source
swapped for such a file) forever; one part nested 100,000 deep lost every session of the database
(a ``RecursionError``), a Gemini CLI document the same; a WAL database imported while opencode
was not running gained a ``-wal`` and ``-shm`` beside it.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from oc_build import REMATCH, TREE, database_from_tree, read_jsonl

from rematch_opencode import store

MAIN = "ses_0a0000000001AAAAAAAAAAAAAA"
SUB = "ses_0a0000000002BBBBBBBBBBBBBB"
DEEP = 100_000
#: An endless recursive query: counts up forever, never yields a row to the outer select.
ENDLESS = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r WHERE n < 0"
GEMINI_DOC = Path(__file__).resolve().parent.parent / "gemini_cli" / "fixtures" / "session-2025-06-30T10-02-5f0c2a7e.json"


def run(home: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real CLI with HOME in the test's folder; a hang fails the test at ``timeout``."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    return subprocess.run([*REMATCH, *args], capture_output=True, text=True, timeout=timeout, env=env)


def _database(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "opencode.db"
    database_from_tree(TREE, db).close()  # closed: SQLite checkpoints and removes its -wal and -shm
    return db


def _view_over_endless_query(db: Path, table: str) -> None:
    con = sqlite3.connect(db, isolation_level=None)
    con.execute(f"ALTER TABLE {table} RENAME TO {table}_rows")
    columns = [r[1] for r in con.execute(f"PRAGMA table_info({table}_rows)")]
    select = ", ".join(f"NULL AS {c}" for c in columns)
    con.execute(f"CREATE VIEW {table} AS SELECT {select} FROM ({ENDLESS})")
    con.close()


@pytest.mark.parametrize("table", ["part", "session"])
def test_a_view_over_an_endless_query_is_refused_not_spun_on(tmp_path: Path, table: str) -> None:
    """``part`` (or ``session``) a VIEW: the import ends at once with a one-line error naming it;
    ``report`` and ``show --conversation`` of an imported source swapped for such a file answer
    in bounded time."""
    good = _database(tmp_path / "data")
    out = tmp_path / "out"
    res = run(tmp_path, "import", str(good.parent), "--out", str(out), "-j", "1")
    assert res.returncode == 0 and "2 sessions imported" in res.stdout, res.stdout + res.stderr
    _view_over_endless_query(good, table)
    began = time.monotonic()
    res = run(tmp_path, "import", str(good.parent), "--out", str(tmp_path / "fresh"), "-j", "1")
    assert f"not opencode's tables, not read: {table} (view)" in res.stdout + res.stderr, res.stdout + res.stderr
    assert res.returncode != 0 and time.monotonic() - began < 30
    for args in (("report", "--out", str(out)), ("show", MAIN, "--conversation", "--out", str(out))):
        res = run(tmp_path, *args)
        assert "Traceback" not in res.stderr, res.stderr
    # What the import stored is shown: the swapped database is not opened.
    show = run(tmp_path, "show", MAIN, "--conversation", "--out", str(out))
    assert "Run the tests, then look around." in show.stdout and "not opencode's tables" not in show.stdout
    # Without it (a data folder from before the store), the database is read and refused, in one line.
    shutil.rmtree(out / "conversations")
    show = run(tmp_path, "show", MAIN, "--conversation", "--out", str(out))
    assert "not opencode's tables" in show.stdout + show.stderr, show.stdout + show.stderr


def test_a_statement_past_its_time_is_interrupted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The progress handler: a query that would run forever on plain tables stops at the bound."""
    db = _database(tmp_path / "data")
    monkeypatch.setattr(store, "QUERY_SECONDS", 0.2)
    scratch: list[str] = []
    con, deadline = store._connect(db, scratch)
    deadline.arm()
    began = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="interrupt"):
        con.execute(ENDLESS).fetchall()
    assert deadline.expired and time.monotonic() - began < 5
    con.close()


def test_a_part_nested_past_the_stack_costs_that_part_only(tmp_path: Path) -> None:
    """One part 100,000 deep: a one-line error naming the part; both sessions and every other
    part are imported."""
    db = _database(tmp_path / "data")
    con = sqlite3.connect(db, isolation_level=None)
    pid, mid = con.execute("SELECT id, message_id FROM part WHERE session_id = ? ORDER BY id LIMIT 1",
                           (SUB,)).fetchone()
    con.execute("UPDATE part SET data = ? WHERE id = ?", ('{"type": "text", "x": ' + "[" * DEEP + "]" * DEEP + "}", pid))
    before = con.execute("SELECT count(*) FROM part").fetchone()[0]
    con.close()
    res = run(tmp_path, "import", str(db.parent), "--out", str(tmp_path / "out"), "-j", "1")
    text = res.stdout + res.stderr
    assert "2 sessions imported" in text and f"part {pid}: data is not a JSON object (JSON nested too deeply)" in text, text
    assert "Traceback" not in text and "RecursionError" not in text
    assert {p.stem for p in (tmp_path / "out" / "traces").glob("*.jsonl")} == {MAIN, SUB}
    assert before > 1 and mid


def test_a_wal_database_gains_no_files_beside_it(tmp_path: Path) -> None:
    """opencode not running (no ``-wal``/``-shm``): nothing appears beside the file. A ``-wal`` left
    without its ``-shm`` (opencode killed): its committed rows are read, from a private copy."""
    db = _database(tmp_path / "data")
    assert db.read_bytes()[18:20] == b"\x02\x02"  # the header's WAL mode (read without SQLite: it would add files)
    res = run(tmp_path, "import", str(db.parent), "--out", str(tmp_path / "out"), "-j", "1")
    assert res.returncode == 0 and "2 sessions imported" in res.stdout, res.stdout + res.stderr
    assert sorted(p.name for p in db.parent.iterdir()) == ["opencode.db"]
    # A writer that stops without a checkpoint leaves its log: copy the pair before it closes.
    killed = tmp_path / "killed"
    killed.mkdir()
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("PRAGMA wal_autocheckpoint = 0")
    con.execute("UPDATE part SET data = replace(data, 'Run the tests, then look around.', 'Written in the log.')")
    shutil.copyfile(db, killed / "opencode.db")
    shutil.copyfile(str(db) + "-wal", killed / "opencode.db-wal")
    con.close()
    res = run(tmp_path, "import", str(killed), "--out", str(tmp_path / "out2"), "-j", "1")
    assert res.returncode == 0 and "2 sessions imported" in res.stdout, res.stdout + res.stderr
    assert sorted(p.name for p in killed.iterdir()) == ["opencode.db", "opencode.db-wal"]
    inputs = [r["text"] for r in read_jsonl(tmp_path / "out2" / "traces" / f"{MAIN}.jsonl") if r["ev"] == "input"]
    assert inputs[0] == "Written in the log."


def test_a_gemini_document_nested_past_the_stack_costs_that_session_only(tmp_path: Path) -> None:
    """A Gemini CLI document with one message 100,000 deep: a one-line error for that file; the
    good document beside it is imported."""
    folder = tmp_path / "chats"
    folder.mkdir()
    shutil.copy(GEMINI_DOC, folder)
    doc = json.loads(GEMINI_DOC.read_text())
    doc["sessionId"] = "5f0c2a7e-2222-4c2d-9e7f-0123456789ab"
    text = json.dumps(doc).replace('"messages": [', '"messages": [{"deep": ' + "[" * DEEP + "]" * DEEP + "}, ", 1)
    (folder / "session-2025-06-30T10-03-5f0c2a7f.json").write_text(text)
    res = run(tmp_path, "import", str(folder), "--out", str(tmp_path / "out"), "-j", "1")
    out = res.stdout + res.stderr
    assert "1 sessions imported" in out and "JSON nested too deeply" in out, out
    assert "Traceback" not in out and "RecursionError" not in out
