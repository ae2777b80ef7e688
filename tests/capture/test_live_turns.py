"""A run's live turn_ends: one per model response, each with its model and usage, as on import.

Found by the harness rig (tests/harness) against Claude Code 2.1.328: live wrote one turn_end per
run with no model, and Claude Code runs the ``Stop`` hook before the run's last response is in the
transcript, so that response's usage was lost (a run of one response counted zero tokens).
Driven through the installed hook command, one process per event (in-process capture).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from capture_helpers import HookSession, read_jsonl

from rematch_trace.store.datafolder import DataDir

SID = "0b7d3c55-1f2e-4a9b-8c7d-6e5f4a3b2c1d"
MODEL = "claude-sonnet-4-5"


def _assistant(mid: str, content: list[dict[str, Any]], stop: str, out_tokens: int) -> dict[str, Any]:
    return {"type": "assistant", "sessionId": SID, "uuid": f"u-{mid}", "message": {
        "id": mid, "type": "message", "role": "assistant", "model": MODEL, "content": content,
        "stop_reason": stop, "usage": {"input_tokens": 100, "output_tokens": out_tokens,
                                       "cache_read_input_tokens": 5, "cache_creation_input_tokens": 3}}}


PROMPT = {"type": "user", "sessionId": SID, "uuid": "u-p", "message": {"role": "user", "content": "list it"}}
CALL = _assistant("msg_1", [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}],
                  "tool_use", 7)
RESULT = {"type": "user", "sessionId": SID, "uuid": "u-r", "message": {"role": "user", "content": [
    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"}]}}
LAST = _assistant("msg_2", [{"type": "text", "text": "Done."}], "end_turn", 9)


def _session(tmp_path: Path, late: bool, unwritten: bool = False) -> list[dict[str, Any]]:
    """One prompt, a Bash call, a final answer; with ``late`` the answer reaches the transcript after the Stop
    began; with ``unwritten`` the transcript file itself is first written then (a new session's file)."""
    s = HookSession(tmp_path, SID)
    data, send, write = s.data, s.send, s.write


    send("SessionStart", source="startup")
    if unwritten:
        writer = threading.Timer(0.3, write, args=(PROMPT, CALL, RESULT, LAST))  # past the hook's start
        writer.start()
        send("Stop", last_assistant_message="Done.")
        writer.join()
        send("SessionEnd", reason="other")
        return read_jsonl(DataDir(data).trace_path(SID))
    write(PROMPT)
    send("UserPromptSubmit", prompt="list it")
    write(CALL)
    send("PreToolUse", tool_name="Bash", tool_use_id="toolu_1", tool_input={"command": "ls"})
    write(RESULT)
    send("PostToolUse", tool_name="Bash", tool_use_id="toolu_1", tool_input={"command": "ls"},
         tool_response={"stdout": "a.txt", "stderr": "", "interrupted": False})
    writer = None
    if late:
        writer = threading.Timer(0.1, write, args=(LAST,))  # as Claude Code flushes it: after the hook started
        writer.start()
    else:
        write(LAST)
    send("Stop", last_assistant_message="Done.")
    if writer is not None:
        writer.join()
    send("SessionEnd", reason="other")
    return read_jsonl(DataDir(data).trace_path(SID))


def _turns(trace: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [((r["model"] or {}).get("id"), r["usage"]["output"], r["stop_reason"], r["text_head"])
            for r in trace if r["ev"] == "turn_end"]


def test_each_response_is_a_turn_with_its_model_and_usage(tmp_path: Path) -> None:
    trace = _session(tmp_path, late=False)
    assert _turns(trace) == [(MODEL, 7, "tool_use", ""), (MODEL, 9, "end_turn", "Done.")]
    assert [r["turns"] for r in trace if r["ev"] == "agent_end"] == [2]


def test_a_stop_before_the_last_response_is_written_waits_for_it(tmp_path: Path) -> None:
    trace = _session(tmp_path, late=True)
    assert _turns(trace) == [(MODEL, 7, "tool_use", ""), (MODEL, 9, "end_turn", "Done.")]


def test_a_stop_before_the_transcript_exists_waits_for_it(tmp_path: Path) -> None:
    # A new session's transcript may first reach the disk after its first Stop began: the Stop waits
    # for it as for a late answer, and each response is still a turn with its model and usage.
    trace = _session(tmp_path, late=False, unwritten=True)
    assert [t[:2] for t in _turns(trace)] == [(MODEL, 7), (MODEL, 9)]
