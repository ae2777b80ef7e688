"""A session captured live is in the search index and has its summary stored when it ends, before any
``rematch search`` or import runs. Driven through the installed hook command, one process per event."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
from capture_helpers import HookSession

SID = "7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"


def test_a_live_session_is_indexed_and_summarized_when_it_ends(tmp_path: Path) -> None:
    s = HookSession(tmp_path, SID, projects="claude-config/projects", made=False)
    data, send = s.data, s.send


    send("SessionStart", source="startup")
    send("UserPromptSubmit", prompt="please rename the wobblegong module")
    send("PreToolUse", tool_name="Bash", tool_use_id="toolu_01", tool_input={"command": "git mv wobblegong.py x.py"})
    send("PostToolUse", tool_name="Bash", tool_use_id="toolu_01", tool_input={"command": "git mv wobblegong.py x.py"},
         tool_response={"stdout": "", "stderr": "", "interrupted": False})
    send("Stop", last_assistant_message="Renamed the wobblegong module.")
    assert not (data / "search.sqlite").exists()  # nothing indexed while the session runs
    send("SessionEnd", reason="other")
    with sqlite3.connect(data / "search.sqlite") as db:
        kinds = sorted(r[0] for r in db.execute("SELECT kind FROM text WHERE text MATCH 'wobblegong'"))
    assert kinds == ["assistant", "prompt", "tool"]
    with sqlite3.connect(data / "ledger.sqlite") as db:
        stored = orjson.loads(db.execute("SELECT summary FROM sessions").fetchone()[0])
    assert stored["summary"]["inputs"] == 1 and stored["summary"]["tools"] == {"Bash": [1, 0]}
