"""The report's session pages of one opencode database: each shows its conversation, read from the database
that holds every session.

    python bench/opencode_report.py --sessions 300

Builds a database of ``--sessions`` sessions (10 prompts each, every answer with a text part and a ``bash``
call of 2 KB output; opencode 1.18's tables and its ``part (message_id, id)`` and ``message (session_id,
time_created, id)`` indexes) in a temporary folder, imports it (``rematch import``, the opencode plugin
alone), then times ``rematch report`` cold (every page) and one ``rematch show --conversation``.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "opencode"))

from oc_build import SCHEMA, add_message  # noqa: E402

INDEXES = """
CREATE INDEX part_message_id_id_idx ON part (message_id, id);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
"""


def build(db: Path, sessions: int) -> None:
    """The database: ``sessions`` sessions of 10 prompts, each answered with text and one bash call."""
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(SCHEMA + INDEXES)
    con.execute("BEGIN")
    t0 = 1760000000000
    for i in range(sessions):
        sid = f"ses_{i:08d}AAAAAAAAAAAAAAAAAA"
        con.execute("INSERT INTO session VALUES (?,?,?,?,?,?,?,?,?)",
                    (sid, "p", None, "slug", "/work/demo", "t", "1.18.33", t0 + i * 100000, t0 + i * 100000))
        for j in range(10):
            t = t0 + i * 100000 + j * 1000
            user = {"id": f"msg_{i:06d}{j:03d}0", "sessionID": sid, "role": "user", "time": {"created": t}}
            add_message(con, user, [{"id": f"prt_{i:06d}{j:03d}0", "type": "text", "text": f"prompt {i} {j}"}])
            answer = {"id": f"msg_{i:06d}{j:03d}1", "sessionID": sid, "role": "assistant",
                      "time": {"created": t + 1, "completed": t + 500}, "modelID": "m", "providerID": "p",
                      "tokens": {"input": 10, "output": 5}}
            add_message(con, answer, [
                {"id": f"prt_{i:06d}{j:03d}1", "type": "text", "text": "answer " * 50},
                {"id": f"prt_{i:06d}{j:03d}2", "type": "tool", "callID": f"c{i}_{j}", "tool": "bash",
                 "state": {"status": "completed", "input": {"command": "ls"}, "output": "x" * 2000,
                           "metadata": {"exit": 0}, "time": {"start": t + 2, "end": t + 3}}}])
    con.execute("COMMIT")
    con.close()


def timed(*args: str) -> float:
    """Wall seconds of one ``rematch`` command (it must succeed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMATCH_")}
    env["REMATCH_LOAD_PLUGINS"] = "opencode"
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rematch_trace.cli", *args], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    """Build, import, and print the report's and one view's wall time."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=300)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src, data = Path(tmp) / "src", Path(tmp) / "data"
        src.mkdir()
        build(src / "opencode.db", args.sessions)
        size = (src / "opencode.db").stat().st_size
        imp = timed("import", str(src), "--data", str(data), "-q")
        rep = timed("report", "--data", str(data), "--out", str(Path(tmp) / "report"))
        one = timed("show", "ses_00000005AAAAAAAAAAAAAAAAAA", "--data", str(data), "--conversation")
        print(f"{args.sessions} sessions, database {size / 1e6:.1f} MB: import {imp:.2f} s, "
              f"report (every page) {rep:.2f} s ({rep / args.sessions * 1000:.0f} ms a page), "
              f"show --conversation {one:.2f} s")


if __name__ == "__main__":
    main()
