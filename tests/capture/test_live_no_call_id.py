"""Tool payloads of Claude Code before 2.0.43 (no ``tool_use_id``) are recorded, not dropped.

The call's id is the transcript's (the newest ``tool_use`` of that name and input), so the live
trace names the call as the import does; a payload whose call is not in the transcript is one
line in ``live/errors.log`` (ids only) instead of nothing. Driven through the installed hook
command, one process per event, and ``rematch import`` of the same transcript.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from capture_helpers import REMATCH, HookSession, read_jsonl

from rematch_trace.store.datafolder import DataDir

SID = "2d4f6a8c-0e1b-4c3d-9e5f-7a9b1c3d5e7f"
SECRET_COMMAND = "echo payload-text-never-logged"


def _line(kind: str, uuid: str, content: Any, **more: Any) -> dict[str, Any]:
    return {"type": kind, "sessionId": SID, "uuid": uuid, "timestamp": "2026-12-01T10:00:00Z", "version": "2.0.30",
            "message": {"role": kind, "content": content, **more}}


PROMPT = _line("user", "u1", "list it")
CALL = _line("assistant", "u2", [{"type": "tool_use", "id": "toolu_old1", "name": "Bash", "input": {"command": "ls"}}],
             id="msg_1", model="claude-sonnet-4-5", stop_reason="tool_use", usage={"input_tokens": 5, "output_tokens": 3})
RESULT = _line("user", "u3", [{"type": "tool_result", "tool_use_id": "toolu_old1", "content": "a.txt"}])
LAST = _line("assistant", "u4", [{"type": "text", "text": "Done."}], id="msg_2", model="claude-sonnet-4-5",
             stop_reason="end_turn", usage={"input_tokens": 6, "output_tokens": 2})


def test_old_tool_payloads_take_their_call_id_from_the_transcript(tmp_path: Path) -> None:
    s = HookSession(tmp_path, SID, projects="projects", home="home")
    transcript, data, send, write = s.transcript, s.data, s.send, s.write


    send("SessionStart", source="startup")
    write(PROMPT)
    send("UserPromptSubmit", prompt="list it")
    write(CALL)
    send("PreToolUse", tool_name="Bash", tool_input={"command": "ls"})  # no tool_use_id, as before 2.0.43
    write(RESULT)
    send("PostToolUse", tool_name="Bash", tool_input={"command": "ls"},
         tool_response={"stdout": "a.txt", "stderr": "", "interrupted": False})
    # A call the transcript does not hold: not recorded, and said so.
    send("PostToolUse", tool_name="Bash", tool_input={"command": SECRET_COMMAND},
         tool_response={"stdout": "x", "stderr": "", "interrupted": False})
    write(LAST)
    send("Stop", last_assistant_message="Done.")
    send("SessionEnd", reason="other")

    live = read_jsonl(DataDir(data).trace_path(SID))
    imported = tmp_path / "imported"
    res = subprocess.run([REMATCH, "import", str(transcript.parent.parent), "--out", str(imported), "-j", "1"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr

    def results(trace: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [(r["call_id"], r["tool"], r["args_hash"], r["is_error"]) for r in trace if r["ev"] == "tool_result"]

    assert [r[:2] for r in results(live)] == [("toolu_old1", "Bash")]
    assert results(live) == results(read_jsonl(DataDir(imported).trace_path(SID)))
    log = (data / "live" / "errors.log").read_text()
    assert "PostToolUse: the call was not recorded" in log and SID in log
    assert "payload-text-never-logged" not in log
