"""``/compact``'s helper agents leave no trace live, as they leave no file to import.

Claude Code 2.1.328 runs two helper agents when it compacts: each fires ``SubagentStop`` (no
``SubagentStart``, an empty ``agent_type``) naming an ``agent_transcript_path`` it never writes.
Live made a ``sub`` trace of each (one ``turn_end``, no usage) that the import, whose authority is
the transcript, has no file for. Now a ``SubagentStop`` whose own file does not exist records
nothing; a subagent that wrote its file keeps its trace, live and on import. Driven through the
installed hook command, one process per event, and ``rematch import`` of the same folder.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from capture_helpers import REMATCH, HookSession

from rematch_trace.store.datafolder import DataDir

SID = "3e8a1f60-2b7c-4d8e-9f0a-1b2c3d4e5f60"
WRITER = "a1b2c3d4e5f6a7b8c"  # a subagent that writes its file
HELPER = "a7ff93adff552203e"  # a compaction helper (the id Claude Code gave one in the rig)


def _line(kind: str, uuid: str, sec: int, content: Any, **more: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message.update(id=f"msg_{uuid}", type="message", model="claude-sonnet-4-5", stop_reason="end_turn",
                       usage={"input_tokens": 10, "output_tokens": 5})
    return {"type": kind, "sessionId": SID, "uuid": uuid, "timestamp": f"2026-12-01T10:00:0{sec}Z",
            "message": message, **more}


def test_a_helper_agent_without_a_file_has_no_live_trace(tmp_path: Path) -> None:
    s = HookSession(tmp_path, SID, made=False)
    transcript, data, send, write = s.transcript, DataDir(s.data), s.send, s.append
    folder = transcript.parent
    subagents = folder / SID / "subagents"
    subagents.mkdir(parents=True)


    send("SessionStart", source="startup")
    write(transcript, _line("user", "u-p", 0, "summarise"))
    send("UserPromptSubmit", prompt="summarise")
    # A subagent that writes its own file (its lines are sidechain lines).
    sub_file = subagents / f"agent-{WRITER}.jsonl"
    send("SubagentStart", agent_id=WRITER, agent_type="general-purpose")
    write(sub_file, _line("user", "s-p", 1, "look", isSidechain=True, agentId=WRITER),
          _line("assistant", "s-a", 2, [{"type": "text", "text": "Looked."}], isSidechain=True, agentId=WRITER))
    send("SubagentStop", agent_id=WRITER, agent_type="general-purpose", agent_transcript_path=str(sub_file),
         last_assistant_message="Looked.", stop_hook_active=False)
    write(transcript, _line("assistant", "u-a", 3, [{"type": "text", "text": "Summary."}]))
    send("Stop", last_assistant_message="Summary.", stop_hook_active=False)
    # /compact's helper: a stop for a file that is never written.
    send("PreCompact", trigger="manual", custom_instructions=None)
    send("SubagentStop", agent_id=HELPER, agent_type="", agent_transcript_path=str(subagents / f"agent-{HELPER}.jsonl"),
         last_assistant_message="ok", stop_hook_active=False)
    send("SessionStart", source="compact", model="claude-sonnet-4-5")
    send("SessionEnd", reason="other")

    live = sorted(p.name for p in (data.root / "traces").glob("*.jsonl"))
    assert live == [f"{SID}.agent-{WRITER}.jsonl", f"{SID}.jsonl"]
    assert not list((data.root / "live").glob(f"*{HELPER}*"))

    imported = tmp_path / "imported"
    res = subprocess.run([REMATCH, "import", str(folder.parent), "--out", str(imported), "-j", "1"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert sorted(p.name for p in (imported / "traces").glob("*.jsonl")) == live
