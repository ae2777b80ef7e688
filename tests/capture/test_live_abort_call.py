"""A call an Esc left without a result belongs to the aborted run, as the interrupted result it is.

Claude Code runs no ``PostToolUse`` and no ``Stop`` for a call the user interrupted (Esc): the
transcript holds the call's ``tool_result`` (``[Request interrupted by user for tool use]``) and
the next prompt follows. Live wrote that call as ``tool_blocked`` ("no result: blocked or
cancelled") at the next prompt, in the next run's turn, where the import has an interrupted
``tool_result`` in the aborted run. Driven through the installed hook command and ``rematch import``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from capture_helpers import REMATCH, HookSession, read_jsonl

from rematch_trace.store.datafolder import DataDir

SID = "6a8c0e2f-4b1d-4e3f-8a5b-9c7d1e3f5a7b"
T = "2026-12-01T10:00:0{}Z"


def _line(kind: str, uuid: str, n: int, content: Any, prompt_id: str = "", **more: Any) -> dict[str, Any]:
    line: dict[str, Any] = {"type": kind, "sessionId": SID, "uuid": uuid, "timestamp": T.format(n),
                            "message": {"role": kind, "content": content, **more}}
    if prompt_id:
        line["promptId"] = prompt_id
    return line


def _assistant(uuid: str, n: int, content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return _line("assistant", uuid, n, content, id=f"msg_{uuid}", model="claude-sonnet-4-5", stop_reason=stop,
                 usage={"input_tokens": 5, "output_tokens": 3})


CALL = {"command": "sleep 100"}


def test_an_interrupted_call_is_an_interrupted_result_of_its_run(tmp_path: Path) -> None:
    s = HookSession(tmp_path, SID, projects="projects", home="home")
    transcript, data, send, write = s.transcript, s.data, s.send, s.write


    send("SessionStart", source="startup")
    write(_line("user", "p1", 1, "wait a while", "prompt-1"))
    send("UserPromptSubmit", prompt="wait a while", prompt_id="prompt-1")
    write(_assistant("a1", 2, [{"type": "tool_use", "id": "toolu_sleep", "name": "Bash", "input": CALL}], "tool_use"))
    send("PreToolUse", tool_name="Bash", tool_use_id="toolu_sleep", tool_input=CALL, prompt_id="prompt-1")
    # Esc: the harness writes the interrupted result and the marker, and runs no hook.
    write(_line("user", "r1", 3, [{"type": "tool_result", "tool_use_id": "toolu_sleep", "is_error": True,
                                   "content": "[Request interrupted by user for tool use]"}], "prompt-1"),
          _line("user", "i1", 3, [{"type": "text", "text": "[Request interrupted by user for tool use]"}], "prompt-1"))
    write(_line("user", "p2", 4, "never mind", "prompt-2"))
    send("UserPromptSubmit", prompt="never mind", prompt_id="prompt-2")
    write(_assistant("a2", 5, [{"type": "text", "text": "Fine."}], "end_turn"))
    send("Stop", last_assistant_message="Fine.", prompt_id="prompt-2")
    send("SessionEnd", reason="other")

    imported = tmp_path / "imported"
    res = subprocess.run([REMATCH, "import", str(transcript.parent.parent), "--out", str(imported), "-j", "1"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr

    def shape(trace: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [(r["ev"], r.get("call_id"), r.get("is_error"), r.get("error_class"), r.get("turns"))
                for r in trace if r["ev"] in ("input", "tool_result", "tool_blocked", "agent_end")]

    live = read_jsonl(DataDir(data).trace_path(SID))
    imp = read_jsonl(DataDir(imported).trace_path(SID))
    assert shape(live) == shape(imp)
    assert not any(r["ev"] == "tool_blocked" for r in live)

    def turns_of(folder: Path) -> list[tuple[Any, ...]]:
        return sorted((e["kind"], e.get("source_tool_call_id") or "", e.get("source_turn_id") or "")
                      for e in read_jsonl(DataDir(folder).events_path(SID)) if e.get("source_tool_call_id"))

    assert turns_of(data) == turns_of(imported)
