"""A Codex subagent captured live through the installed hook client: its own session, linked as the import links it.

Codex 0.169 runs a spawned agent's hooks with the parent's ``session_id``, the subagent's thread id
as ``agent_id`` and its own rollout as ``transcript_path`` (``SubagentStop``: the parent's, and the
subagent's as ``agent_transcript_path``); shapes captured through the rig. The import reads the
subagent's rollout as a session of its own (its thread id, kind ``sub``, the parent from its
``session_meta``). Live must give the same trace and the same event links.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import orjson
from capture_helpers import REMATCH, hook_env, read_jsonl
from test_live_codex import _line, _projection, _usage, run_codex_hook

PARENT = "01a232e6-7977-7e50-9859-a1810b43935d"
SUB = "01a232e6-7a34-78d0-af28-253f2f9bd1b4"
TURN = "01a232e6-7a3e-7a63-b1d1-35a96f7f3801"


def sub_rollout(project: Path) -> list[dict[str, Any]]:
    """The subagent's rollout: a prompt, ``echo from-sub``, its answer."""
    meta = {"session_id": PARENT, "id": SUB, "parent_thread_id": PARENT, "timestamp": "2026-12-01T18:38:15.096Z",
            "cwd": str(project), "originator": "codex_exec", "cli_version": "0.169.0", "model_provider": "rig",
            "source": {"subagent": {"thread_spawn": {"parent_thread_id": PARENT, "depth": 1, "agent_path": None,
                                                     "agent_nickname": "Mendel", "agent_role": None}}},
            "thread_source": "subagent", "agent_nickname": "Mendel"}
    total = [0, 0, 0]

    def count(u: tuple[int, int, int]) -> dict[str, Any]:
        for k in range(3):
            total[k] += u[k]
        return _line("15.3", "event_msg", {"type": "token_count", "info": {
            "total_token_usage": _usage(*total), "last_token_usage": _usage(*u)}})

    return [
        _line("15.096", "session_meta", meta),
        _line("15.100", "event_msg", {"type": "task_started", "turn_id": TURN}),
        _line("15.120", "turn_context", {"turn_id": TURN, "cwd": str(project), "approval_policy": "never",
                                         "sandbox_policy": {"type": "danger-full-access"}, "model": "gpt-rig"}),
        _line("15.174", "response_item", {"type": "message", "role": "user",
                                          "content": [{"type": "input_text", "text": "List the files."}]}),
        _line("15.258", "response_item", {"type": "function_call", "name": "exec_command",
                                          "arguments": '{"cmd": "echo from-sub"}', "call_id": "call_s"}),
        _line("15.259", "token_usage_record", {"turn_id": TURN, "usage": _usage(104, 10, 7)}),
        _line("15.360", "event_msg", {"type": "item_completed", "turn_id": TURN, "item": {
            "type": "CommandExecution", "id": "call_s", "status": "completed", "aggregated_output": "from-sub\n",
            "exit_code": 0}}),
        _line("15.365", "response_item", {"type": "function_call_output", "call_id": "call_s", "output": (
            "Chunk ID: ea\nWall time: 0.0 seconds\nProcess exited with code 0\nOutput:\nfrom-sub\n")}),
        count((104, 10, 7)),
        _line("15.388", "response_item", {"type": "message", "role": "assistant",
                                          "content": [{"type": "output_text", "text": "sub done"}]}),
        _line("15.389", "token_usage_record", {"turn_id": TURN, "usage": _usage(106, 20, 8)}),
        count((106, 20, 8)),
        _line("15.390", "event_msg", {"type": "task_complete", "turn_id": TURN, "last_agent_message": "sub done"}),
    ]


def test_a_codex_subagent_live_is_its_own_session_linked_as_on_import(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    folder = tmp_path / "sessions"
    folder.mkdir()
    parent_path = folder / f"rollout-2026-12-01T18-38-14-{PARENT}.jsonl"
    path = folder / f"rollout-2026-12-01T18-38-15-{SUB}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in sub_rollout(project)))
    env = hook_env(tmp_path, tmp_path / "data")
    base = {"session_id": PARENT, "turn_id": TURN, "cwd": str(project), "model": "gpt-rig",
            "permission_mode": "bypassPermissions"}
    own = {**base, "agent_id": SUB, "agent_type": "default", "transcript_path": str(path)}
    call = {**own, "tool_name": "Bash", "tool_input": {"command": "echo from-sub"}, "tool_use_id": "call_s"}
    for payload in [
        {**own, "hook_event_name": "SubagentStart"},
        {**own, "hook_event_name": "UserPromptSubmit", "prompt": "List the files."},
        {**call, "hook_event_name": "PreToolUse"},
        {**call, "hook_event_name": "PostToolUse", "tool_response": "from-sub\n"},
        {**base, "transcript_path": str(parent_path), "agent_transcript_path": str(path), "agent_id": SUB,
         "agent_type": "default", "hook_event_name": "SubagentStop", "stop_hook_active": False,
         "last_assistant_message": "sub done"},
    ]:
        res = run_codex_hook(payload, env)
        assert res.returncode == 0 and res.stdout == b"", payload["hook_event_name"]
    data = tmp_path / "data"
    # Nothing of the subagent lands in the parent's trace: its records are its own session's.
    assert not (data / "traces" / f"{PARENT}.jsonl").exists()
    live = read_jsonl(data / "traces" / f"{SUB}.jsonl")
    imp = subprocess.run([REMATCH, "import", str(path), "--out", str(tmp_path / "imp"), "-j", "1"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert imp.returncode == 0, imp.stderr
    imported = read_jsonl(tmp_path / "imp" / "traces" / f"{SUB}.jsonl")
    assert live[0]["agent"] == imported[0]["agent"] == {"kind": "sub", "name": "codex"}
    assert _projection(live) == _projection(imported)
    assert live[-1]["ev"] == "session_shutdown"  # SubagentStop ends the subagent's session

    def links(folder: Path) -> set[tuple[Any, ...]]:
        return {(e["kind"], e["source_session_id"], e["agent_sub_id"], e["metadata"].get("agent_name"),
                 e["source_tool_call_id"], e["action_fingerprint"])
                for e in read_jsonl(folder / "events" / f"{SUB}.jsonl")}

    assert links(data) == links(tmp_path / "imp")
    assert (("session_start", PARENT, SUB, "Mendel", None, None)) in links(data)
