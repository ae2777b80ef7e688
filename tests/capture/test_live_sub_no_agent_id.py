"""A subagent's tool payload that names no ``agent_id`` lands in the subagent's trace, not the main one.

Versions that did not name the subagent in its tool payloads send them with the main session's
id and transcript. The call is in the subagent's own file (``<sid>/subagents/agent-<id>.jsonl``),
so the live capture finds the subagent there, and the live trace agrees with the import, which
reads that file as session ``<sid>.agent-<id>``. Driven through the installed hook command and
``rematch import``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import orjson
from capture_helpers import REMATCH, HookSession, read_jsonl

from rematch_trace.store.datafolder import DataDir

SID = "8e0a2c4e-6f81-4a3b-9c5d-7e9f1a3b5c7d"
AGENT = "a1b2c3d4e5f6a7b8c"


def _line(kind: str, uuid: str, content: Any, sidechain: bool = False, **more: Any) -> dict[str, Any]:
    line = {"type": kind, "sessionId": SID, "uuid": uuid, "timestamp": "2026-12-01T10:00:00Z",
            "isSidechain": sidechain, "message": {"role": kind, "content": content, **more}}
    if sidechain:
        line["agentId"] = AGENT
    return line


def _assistant(uuid: str, content: list[dict[str, Any]], stop: str, sidechain: bool = False) -> dict[str, Any]:
    return _line("assistant", uuid, content, sidechain, id=f"msg_{uuid}", model="claude-sonnet-4-5",
                 stop_reason=stop, usage={"input_tokens": 5, "output_tokens": 3})


def test_a_subagent_call_without_agent_id_goes_to_the_subagent(tmp_path: Path) -> None:
    s = HookSession(tmp_path, SID, projects="projects", home="home", made=False)
    transcript, data, send, write = s.transcript, s.data, s.send, s.append
    folder = transcript.parent
    sub_file = folder / SID / "subagents" / f"agent-{AGENT}.jsonl"
    sub_file.parent.mkdir(parents=True)


    task = {"description": "look", "prompt": "Look around.", "subagent_type": "general-purpose"}
    sub_call = {"command": "pwd"}
    send("SessionStart", source="startup")
    write(transcript, _line("user", "p", "delegate"))
    send("UserPromptSubmit", prompt="delegate")
    write(transcript, _assistant("m1", [{"type": "tool_use", "id": "toolu_task", "name": "Task", "input": task}],
                                 "tool_use"))
    send("PreToolUse", tool_name="Task", tool_use_id="toolu_task", tool_input=task)
    write(sub_file, _line("user", "sp", "Look around.", True),
          _assistant("s1", [{"type": "tool_use", "id": "toolu_sub", "name": "Bash", "input": sub_call}], "tool_use", True))
    send("PreToolUse", tool_name="Bash", tool_use_id="toolu_sub", tool_input=sub_call)  # no agent_id
    write(sub_file, _line("user", "sr", [{"type": "tool_result", "tool_use_id": "toolu_sub", "content": "/p"}], True))
    send("PostToolUse", tool_name="Bash", tool_use_id="toolu_sub", tool_input=sub_call,
         tool_response={"stdout": "/p", "stderr": "", "interrupted": False})
    write(sub_file, _assistant("s2", [{"type": "text", "text": "Here."}], "end_turn", True))
    write(transcript, _line("user", "tr", [{"type": "tool_result", "tool_use_id": "toolu_task", "content": "Here."}]))
    send("PostToolUse", tool_name="Task", tool_use_id="toolu_task", tool_input=task, tool_response="Here.")
    write(transcript, _assistant("m2", [{"type": "text", "text": "Done."}], "end_turn"))
    send("Stop", last_assistant_message="Done.")
    send("SessionEnd", reason="other")

    imported = tmp_path / "imported"
    res = subprocess.run([REMATCH, "import", str(folder.parent), "--out", str(imported), "-j", "1"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    live, imp = DataDir(data), DataDir(imported)
    sub = f"{SID}.agent-{AGENT}"

    def calls(dd: DataDir, sid: str) -> list[tuple[Any, ...]]:
        path = dd.trace_path(sid)
        trace = read_jsonl(path) if path.exists() else []
        return [(r["call_id"], r["tool"], r["args_hash"]) for r in trace if r["ev"] == "tool_result"]

    assert [c[0] for c in calls(live, SID)] == ["toolu_task"]
    assert [c[0] for c in calls(live, sub)] == ["toolu_sub"]
    assert calls(live, SID) == calls(imp, SID) and calls(live, sub) == calls(imp, sub)
    # The live capture records the subagent under its main session, as the import does.
    for folder_ in (data, imported):
        listed = subprocess.run([REMATCH, "sessions", "--data", str(folder_), "--json"], capture_output=True,
                                text=True, timeout=60)
        rows = {r["session_id"]: r for r in orjson.loads(listed.stdout)}
        assert rows[sub]["parent"] == SID and rows[SID]["children"] == [sub], folder_
