"""rematch's own denies in the event stream, and a result that arrives after a block.

Driven as Claude Code drives the installed hooks: the fast hook client per event, a real
``rematch serve`` deciding, then the real ``rematch audit``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import orjson
from capture_helpers import HOOK_ARGV, REMATCH, make_repo, read_jsonl

from rematch_trace.live import capture
from rematch_trace.security import events
from rematch_trace.store.datafolder import DataDir
from rematch_trace.testing import validate_trace

SID = "9d2c4e6f-8a0b-4c1d-9e2f-3a4b5c6d7e8f"


def test_a_denied_call_is_an_event_counted_at_the_end_and_audited_as_blocked(
        tmp_path: Path, served: tuple[Path, dict[str, str]]) -> None:
    data, env = served
    repo = make_repo(tmp_path / "repo")
    base = {"session_id": SID, "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(repo),
            "permission_mode": "default"}
    wipe = {"tool_name": "Bash", "tool_use_id": "toolu_wipe", "tool_input": {"command": "rm -rf ~"}}
    steps = [
        {"hook_event_name": "UserPromptSubmit", "prompt": "clean up"},
        {"hook_event_name": "PreToolUse", **wipe},
        # A harness that reports the denied call as a failed one, with the deny's text (the tool_result
        # Claude Code 2.1.328 writes for it: "PreToolUse:Bash hook error: rematch: ..."; it fires no
        # PostToolUseFailure for a permission denial, another harness may).
        {"hook_event_name": "PostToolUseFailure", **wipe,
         "error": "PreToolUse:Bash hook error: rematch: The call deletes the home folder. (policy:delete-home)"},
        {"hook_event_name": "Stop", "last_assistant_message": "I was stopped."},
        {"hook_event_name": "SessionEnd", "reason": "other"},
    ]
    printed = []
    for fields in steps:
        res = subprocess.run(HOOK_ARGV, input=orjson.dumps({**base, **fields}), env=env, capture_output=True,
                             timeout=60)
        assert res.returncode == 0 and res.stderr == b"", fields["hook_event_name"]
        printed.append(res.stdout)
    reason = json.loads(printed[1])["hookSpecificOutput"]["permissionDecisionReason"]
    assert "policy:delete-home" in reason
    evs = read_jsonl(DataDir(data).events_path(SID))
    by_kind = {}
    for ev in evs:
        by_kind.setdefault(ev["kind"], []).append(ev)
    assert "pre_tool_use" in by_kind, [(e["kind"], e["metadata"]) for e in evs]
    [pre] = by_kind["pre_tool_use"]
    [blocked] = by_kind["tool_blocked"]
    assert blocked["source_tool_call_id"] == "toolu_wipe" and blocked["tool_name"] == "Bash"
    assert blocked["metadata"]["blocked_by"] == "rematch" and blocked["metadata"]["rule"] == "policy:delete-home"
    assert blocked["metadata"]["block_reason"].startswith("policy:delete-home: ")
    for field in ("args_summary", "action_fingerprint", "risk_features", "action_type"):
        assert blocked[field] == pre[field], field
    assert "home_deletion" in pre["risk_features"]
    # The result after the block keeps the call's summary and fingerprint.
    [post] = by_kind["post_tool_failure"]
    assert post["args_summary"] == pre["args_summary"] and post["action_fingerprint"] == pre["action_fingerprint"]
    assert "call_seen" not in post["metadata"]
    [end] = by_kind["session_end"]
    assert end["metadata"]["blocked_calls"] == 1 and end["metadata"]["unanswered_calls"] == 0
    # ...and in the trace, its input and args_hash.
    trace = read_jsonl(DataDir(data).trace_path(SID))
    assert validate_trace(trace) == []
    [tb] = [r for r in trace if r["ev"] == "tool_blocked"]
    [result] = [r for r in trace if r["ev"] == "tool_result"]
    assert result["call_id"] == "toolu_wipe" and result["tool"] == "Bash"
    assert result["input"] == {"command": "rm -rf ~"} and result["args_hash"] == tb["args_hash"] is not None
    audit = subprocess.run([REMATCH, "audit", SID, "--out", str(data), "--json"], capture_output=True, text=True,
                           env=env, timeout=60)
    assert audit.returncode == 0, audit.stderr
    [row] = json.loads(audit.stdout)
    assert (row["outcome"], row["rule"]) == ("blocked", "policy:delete-home")
    text = subprocess.run([REMATCH, "audit", SID, "--out", str(data)], capture_output=True, text=True, env=env,
                          timeout=60).stdout
    assert "blocked(policy:delete-home)" in text


def test_the_sink_and_the_service_name_the_same_blocking_hook() -> None:
    assert events.VERDICT_HOOK_ID == capture.VERDICT_HOOK_ID
