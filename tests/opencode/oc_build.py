"""Building opencode data folders for tests: the tree fixture copied, or turned into a database.

The database has the columns of opencode 1.18's ``session``, ``message`` and ``part`` tables that
the plugin reads (the real harness's full schema is exercised by tests/harness/test_rig_opencode.py).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent / "fixtures"
TREE = FIXTURES / "tree"
REMATCH = [sys.executable, "-c", "import sys; from rematch_trace.cli import main; sys.argv[0] = 'rematch'; main()"]

SCHEMA = """
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text, slug text NOT NULL,
  directory text NOT NULL, title text NOT NULL, version text NOT NULL, time_created integer NOT NULL,
  time_updated integer NOT NULL);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL,
  time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
"""


def copy_tree(dest: Path) -> Path:
    """The fixture tree copied under ``dest`` (``dest/storage``); returns ``dest``."""
    shutil.copytree(TREE, dest, dirs_exist_ok=True)
    return dest


def session_files(root: Path) -> list[Path]:
    """The session files of a tree, sorted."""
    return sorted((root / "storage" / "session").glob("*/ses_*.json"))


def _load(p: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(p.read_text())
    return doc


def database_from_tree(tree: Path, db: Path) -> sqlite3.Connection:
    """A WAL database holding the tree's sessions, messages and parts as opencode 1.18 stores them
    (ids and session ids in columns, the rest as the ``data`` JSON); the open connection."""
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(SCHEMA)
    for sp in session_files(tree):
        s = _load(sp)
        con.execute("INSERT INTO session VALUES (?,?,?,?,?,?,?,?,?)",
                    (s["id"], s.get("projectID", "global"), s.get("parentID"), "slug", s["directory"], s["title"],
                     s["version"], s["time"]["created"], s["time"]["updated"]))
        for mp in sorted((tree / "storage" / "message" / s["id"]).glob("*.json")):
            add_message(con, _load(mp), [_load(pp) for pp in sorted((tree / "storage" / "part" / mp.stem).glob("*.json"))])
    return con


def add_message(con: sqlite3.Connection, msg: dict[str, Any], parts: list[dict[str, Any]]) -> None:
    """One message and its parts, as rows."""
    t = msg["time"]["created"]
    data = {k: v for k, v in msg.items() if k not in ("id", "sessionID")}
    con.execute("INSERT INTO message VALUES (?,?,?,?,?)", (msg["id"], msg["sessionID"], t, t, json.dumps(data)))
    for p in parts:
        pdata = {k: v for k, v in p.items() if k not in ("id", "messageID", "sessionID")}
        con.execute("INSERT INTO part VALUES (?,?,?,?,?,?)", (p["id"], msg["id"], msg["sessionID"], t, t, json.dumps(pdata)))


def rematch(home: Path, *args: str, only: str | None = None) -> subprocess.CompletedProcess[str]:
    """The real ``rematch`` CLI with HOME in the test's folder (``only``: load that plugin alone)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    if only is not None:
        env["REMATCH_LOAD_PLUGINS"] = only
    return subprocess.run([*REMATCH, *args], capture_output=True, text=True, timeout=120, env=env)


def read_jsonl(p: Path) -> list[dict[str, Any]]:
    """The records of a JSONL file."""
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
