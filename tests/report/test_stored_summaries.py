"""Session summaries stored in the ledger: ``sessions``, ``stats`` and ``flagged`` read them, not the traces,
while they still describe the traces; a grown session's is made again. Through the real CLI."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hostile"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "search"))

from hostile_gen import cli_env
from test_search import CORPUS_FILES, _grow_claude


def rematch(*args: str) -> subprocess.CompletedProcess[str]:
    """``rematch`` as a user runs it, with the three plugins."""
    return subprocess.run([sys.executable, "-m", "rematch_trace.cli", *args], capture_output=True, text=True,
                          env=cli_env(), timeout=120, errors="replace")


def sessions(data: Path) -> dict[str, dict[str, Any]]:
    res = rematch("sessions", "--data", str(data), "--json")
    assert res.returncode == 0, res.stderr
    return {s["session_id"]: s for s in orjson.loads(res.stdout)}


def test_reading_commands_use_the_summary_stored_at_import(corpus_dir: Path, tmp_path: Path) -> None:
    src = tmp_path / "src"
    for rel in CORPUS_FILES.values():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpus_dir / rel, src / rel)
    data = tmp_path / "data"
    res = rematch("import", str(src), "--data", str(data), "-q")
    assert res.returncode == 0, res.stderr
    with sqlite3.connect(data / "ledger.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 10  # 9: sessions.parent; 10: pi's own name
        rows = db.execute("SELECT count(*), count(summary) FROM sessions").fetchone()
    assert rows[0] == rows[1] > 0  # every session's summary written by the import
    want = sessions(data)
    stats = rematch("stats", "--data", str(data), "--json").stdout
    # Blank every trace, keeping its size and mtime: only a command that reads traces would see it.
    for trace in (data / "traces").glob("*.jsonl"):
        st = trace.stat()
        trace.write_bytes(b" " * (st.st_size - 1) + b"\n")
        os.utime(trace, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert sessions(data) == want
    assert rematch("stats", "--data", str(data), "--json").stdout == stats
    assert any(s["inputs"] > 0 for s in want.values())


def test_a_grown_session_gets_a_new_summary(corpus_dir: Path, tmp_path: Path) -> None:
    src = tmp_path / "src" / "p"
    src.mkdir(parents=True)
    copy = src / Path(CORPUS_FILES["claude_code"]).name
    shutil.copyfile(corpus_dir / CORPUS_FILES["claude_code"], copy)
    data = tmp_path / "data"
    assert rematch("import", str(src), "--data", str(data), "-q").returncode == 0
    before = sessions(data)[copy.stem]
    _grow_claude(copy, "flibbertigibbet")
    assert rematch("import", str(src), "--data", str(data), "-q").returncode == 0
    after = sessions(data)[copy.stem]
    assert after["inputs"] == before["inputs"] + 1
    with sqlite3.connect(data / "ledger.sqlite") as db:
        stored = orjson.loads(db.execute("SELECT summary FROM sessions").fetchone()[0])
    assert stored["summary"]["inputs"] == after["inputs"]  # made again by the continuation, not at read


def test_a_damaged_stored_summary_is_made_again(corpus_dir: Path, tmp_path: Path) -> None:
    src = tmp_path / "src" / "p"
    src.mkdir(parents=True)
    shutil.copyfile(corpus_dir / CORPUS_FILES["claude_code"], src / Path(CORPUS_FILES["claude_code"]).name)
    data = tmp_path / "data"
    assert rematch("import", str(src), "--data", str(data), "-q").returncode == 0
    want = sessions(data)
    with sqlite3.connect(data / "ledger.sqlite") as db:
        db.execute("UPDATE sessions SET summary = '{\"basis\": [1, 2'")
    assert sessions(data) == want  # read from the trace meanwhile
    assert rematch("import", str(src), "--data", str(data), "-q").returncode == 0  # nothing changed: made again
    with sqlite3.connect(data / "ledger.sqlite") as db:
        stored = orjson.loads(db.execute("SELECT summary FROM sessions").fetchone()[0])
    assert stored["summary"]["inputs"] == next(iter(want.values()))["inputs"]
