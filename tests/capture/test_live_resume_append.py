"""A resumed session's live trace is appended to, never cut and written again.

``claude --resume <id>`` (or a later ``-p`` on the same session) is a second process on the same
session id: a new ``SessionStart`` (``source: "resume"``) after the first process's ``SessionEnd``.
The live capture cut the first lifetime's final records (``session_shutdown``) and wrote them again
after the new turns, so a reader following the file saw it shrink. Now each lifetime's end is
appended and committed like any batch: the bytes before the resume are a prefix of the bytes after
it, with one ``session_shutdown`` per lifetime; the import of the same transcript ends the first
lifetime at the ``cost-state`` line Claude Code writes as its process leaves the session, so it has
the same records, and agrees with the live trace on what the rig compares. A writer killed mid-append before the resume leaves
nothing behind. Driven through the installed hook command, one process per event.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import orjson
from capture_helpers import REMATCH, HookSession, read_jsonl

from rematch_trace.store.datafolder import DataDir

SID = "7d2f0c4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
T0 = "2026-12-01T10:00:0{}Z"


def _user(uuid: str, sec: int, content: Any, **more: Any) -> dict[str, Any]:
    return {"type": "user", "sessionId": SID, "uuid": uuid, "timestamp": T0.format(sec),
            "message": {"role": "user", "content": content}, **more}


def _assistant(mid: str, sec: int, content: list[dict[str, Any]], stop: str, out_tokens: int) -> dict[str, Any]:
    return {"type": "assistant", "sessionId": SID, "uuid": f"u-{mid}", "timestamp": T0.format(sec),
            "message": {"id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                        "content": content, "stop_reason": stop,
                        "usage": {"input_tokens": 100, "output_tokens": out_tokens}}}


#: What Claude Code 2.1.328 writes as its process leaves the session (the fields trimmed).
COST_STATE = {"type": "cost-state", "sessionId": SID, "totalCostUSD": 0.001, "totalDuration": 900, "startTime": 0}
CALL = {"command": "echo one", "description": "Print"}
FIRST = [_user("u-p1", 0, "first prompt"),
         _assistant("msg_1", 1, [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": CALL}], "tool_use", 20),
         _user("u-r1", 2, [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "one", "is_error": False}]),
         _assistant("msg_2", 3, [{"type": "text", "text": "Done one."}], "end_turn", 30)]
SECOND = [_user("u-p2", 5, "second prompt"),
          _assistant("msg_3", 6, [{"type": "text", "text": "Done two."}], "end_turn", 40)]


def _projections(trace: list[dict[str, Any]]) -> dict[str, Any]:
    """What the rig compares (tests/harness/rig_compare.py), less what is live-only by design."""
    return {
        "inputs": [(r["text"], r["prelabel"]) for r in trace if r["ev"] == "input"],
        "results": [(r["tool"], r["call_id"], r["args_hash"], r["is_error"]) for r in trace if r["ev"] == "tool_result"],
        "turns": [(r["model"], r["usage"]["output"], r["text_head"]) for r in trace if r["ev"] == "turn_end"],
        "agent_ends": [r["turns"] for r in trace if r["ev"] == "agent_end"],
        "flags": [r["reasons"] for r in trace if r["ev"] == "session_shutdown"][-1:],
    }


def test_a_resumed_session_appends_to_its_live_trace(tmp_path: Path) -> None:
    s = HookSession(tmp_path, SID)
    transcript, data, send, write = s.transcript, DataDir(s.data), s.send, s.write


    def committed() -> dict[str, Any]:
        state: dict[str, Any] = orjson.loads((data.root / "live" / f"{SID}.json").read_bytes())
        return state

    # The first process.
    send("SessionStart", source="startup")
    write(FIRST[0])
    send("UserPromptSubmit", prompt="first prompt")
    write(FIRST[1])
    send("PreToolUse", tool_name="Bash", tool_input=CALL, tool_use_id="toolu_1")
    write(FIRST[2])
    send("PostToolUse", tool_name="Bash", tool_input=CALL, tool_use_id="toolu_1",
         tool_response={"stdout": "one", "stderr": "", "interrupted": False})
    write(FIRST[3])
    send("Stop", last_assistant_message="Done one.", stop_hook_active=False)
    write(COST_STATE)
    send("SessionEnd", reason="other")
    trace_1 = data.trace_path(SID).read_bytes()
    events_1 = data.events_path(SID).read_bytes()
    assert [r["ev"] for r in read_jsonl(data.trace_path(SID))][-1] == "session_shutdown"
    assert committed()["trace_len"] == len(trace_1) and committed()["events_len"] == len(events_1)

    # A writer killed mid-append (past the committed length) before the resume: its half record goes.
    with data.trace_path(SID).open("ab") as f:
        f.write(b'{"seq": 99, "ev": "inp')

    # The second process: claude --resume.
    send("SessionStart", source="resume")
    write(SECOND[0])
    send("UserPromptSubmit", prompt="second prompt")
    write(SECOND[1])
    send("Stop", last_assistant_message="Done two.", stop_hook_active=False)
    write(COST_STATE)
    send("SessionEnd", reason="other")
    trace_2 = data.trace_path(SID).read_bytes()
    events_2 = data.events_path(SID).read_bytes()

    assert trace_2.startswith(trace_1) and len(trace_2) > len(trace_1)
    assert events_2.startswith(events_1) and len(events_2) > len(events_1)
    assert committed()["trace_len"] == len(trace_2) and committed()["events_len"] == len(events_2)
    live = read_jsonl(data.trace_path(SID))
    assert [r["seq"] for r in live] == list(range(len(live)))
    evs = [r["ev"] for r in live]
    assert evs.count("session_shutdown") == 2 and evs.count("session_start") == 1 and evs[-1] == "session_shutdown"
    events = [orjson.loads(x) for x in events_2.splitlines()]
    assert [e["kind"] for e in events].count("session_end") == 2

    imported = tmp_path / "imported"
    res = subprocess.run([REMATCH, "import", str(transcript.parent.parent), "--out", str(imported), "-j", "1"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    imp = read_jsonl(DataDir(imported).trace_path(SID))
    assert _projections(live) == _projections(imp)
    # The import ends the first lifetime where live did (the cost-state line), and nowhere else.
    assert [r["ev"] for r in imp] == evs
    imp_events = [orjson.loads(x) for x in DataDir(imported).events_path(SID).read_bytes().splitlines()]
    assert [e["kind"] for e in imp_events] == [e["kind"] for e in events]
    assert _projections(live)["inputs"] == [("first prompt", "none"), ("second prompt", "none")]
