"""A ``Stop`` that fires again in the same loop (``stop_hook_active: true``) counts only what is new.

A user's ``Stop`` hook that blocks makes Claude Code go on (a meta ``Stop hook feedback:`` line),
then run the ``Stop`` hooks again. Live counted the run's first responses a second time (a real
session: 3,087 output tokens live against 438 on import). Now a blocked stop ends a run, live and
on import alike, and the loop after it is a run of its own; the live ``Stop`` finds its run by the
payload's last text, even when it reads the file after the loop went on (the service captures
after the hook returned). Driven through the installed hook command, one process per event, and
the ``rematch import`` of the same transcript.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from capture_helpers import REMATCH, HookSession, read_jsonl

from rematch_trace.store.datafolder import DataDir

SID = "5c1e7a20-3b4d-4e5f-8a9b-0c1d2e3f4a5b"


def _assistant(mid: str, text: str, out_tokens: int) -> dict[str, Any]:
    return {"type": "assistant", "sessionId": SID, "uuid": f"u-{mid}", "timestamp": "2026-12-01T10:00:01Z",
            "message": {"id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                        "usage": {"input_tokens": 100, "output_tokens": out_tokens}}}


PROMPT = {"type": "user", "sessionId": SID, "uuid": "u-p", "timestamp": "2026-12-01T10:00:00Z",
          "message": {"role": "user", "content": "answer"}}
FEEDBACK = {"type": "user", "sessionId": SID, "uuid": "u-f", "isMeta": True, "timestamp": "2026-12-01T10:00:02Z",
            "message": {"role": "user", "content": "Stop hook feedback:\nSay more."}}
FIRST, SECOND = _assistant("msg_1", "First.", 400), _assistant("msg_2", "Second.", 38)


@pytest.mark.parametrize("late", [False, True], ids=["in-order", "read-after-the-loop-went-on"])
def test_a_second_stop_counts_only_the_new_response(tmp_path: Path, late: bool) -> None:
    s = HookSession(tmp_path, SID)
    transcript, data, send, write = s.transcript, s.data, s.send, s.write


    send("SessionStart", source="startup")
    write(PROMPT)
    send("UserPromptSubmit", prompt="answer")
    write(FIRST)
    if late:  # the first Stop is captured once the loop has gone on
        write(FEEDBACK, SECOND)
    send("Stop", last_assistant_message="First.", stop_hook_active=False)
    if not late:
        write(FEEDBACK, SECOND)
    send("Stop", last_assistant_message="Second.", stop_hook_active=True)
    send("SessionEnd", reason="other")
    live = read_jsonl(DataDir(data).trace_path(SID))

    imported = tmp_path / "imported"
    res = subprocess.run([REMATCH, "import", str(transcript.parent.parent), "--out", str(imported), "-j", "1"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    imp = read_jsonl(DataDir(imported).trace_path(SID))

    def runs(trace: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [(r["ev"], r.get("turns"), (r.get("usage") or {}).get("output"), r.get("text_head"))
                for r in trace if r["ev"] in ("input", "turn_end", "agent_end")]

    assert runs(live) == [("input", None, None, None), ("turn_end", None, 400, "First."), ("agent_end", 1, None, None),
                          ("turn_end", None, 38, "Second."), ("agent_end", 1, None, None)]
    assert runs(imp) == runs(live)
