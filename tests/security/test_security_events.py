"""EventSink: the v1 envelope, pairing, resumable state, and no original input kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest

import rematch_claude_code
from rematch_trace.host import vocab
from rematch_trace.host.source import Source
from rematch_trace.security.events import EventSink, rfc3339
from rematch_trace.security.redact import default_redactor
from rematch_trace.security.sink_state import SinkState
from rematch_trace.store.states import structure, unstructure
from rematch_trace.testing import make_host

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "event-v1.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
SECRET = "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"
HOST = make_host([rematch_claude_code])
SOURCE = Source(harness="claude_code", path=Path("/x/s.jsonl"))
SESSION = vocab.Session(stream="", t=1_700_000_000_000, session_id="sess-1", cwd="/nonexistent/w")


def records() -> list[vocab.Neutral]:
    t = 1_700_000_000_000
    return [
        SESSION,
        vocab.Instructions(stream="", t=t + 1, text="rules", path="/nonexistent/w/CLAUDE.md"),
        vocab.UserMessage(stream="", t=t + 2, text=f"use token {SECRET} to push"),
        vocab.AssistantMessage(
            stream="", t=t + 3, text="ok",
            tool_calls=(
                vocab.ToolCall("c1", "Bash", {"command": f"git push https://x:{SECRET}@github.com/o/r --force"}),
                vocab.ToolCall("c2", "Read", {"file_path": "/home/u/.ssh/id_rsa"}),
                vocab.ToolCall("c3", "Bash", {"command": "echo", "n": float("nan")}),
            ),
        ),
        vocab.ToolResult(stream="", t=t + 4, call_id="c1", output_head="fatal: exit code 1", is_error=True),
        vocab.ToolResult(stream="", t=t + 5, call_id="c2", output_head=f"key {SECRET}"),
        vocab.ToolResult(stream="", t=t + 6, call_id="c3", output_head="ok"),
        vocab.ToolResult(stream="", t=t + 7, call_id="zz", tool="WebFetch", output_head="x"),
        vocab.Abort(stream="", t=t + 8),
    ]


def run(recs: list[vocab.Neutral], state: SinkState | None = None, session: vocab.Session = SESSION) -> tuple[list[dict[str, Any]], EventSink]:
    sink = EventSink(SOURCE, session, host=HOST, redactor=default_redactor(), state=state)
    out: list[dict[str, Any]] = []
    for r in recs:
        out.extend(sink.feed(r))
    return out, sink


def one_pass() -> list[dict[str, Any]]:
    out, sink = run(records())
    return out + sink.finish()


def test_kinds_pairing_and_envelope() -> None:
    events = one_pass()
    kinds = [e["kind"] for e in events]
    assert kinds == [
        "session_start", "instruction_loaded", "user_prompt", "pre_tool_use", "pre_tool_use", "pre_tool_use",
        "post_tool_failure", "post_tool_use", "post_tool_use", "post_tool_use", "session_end",
    ]
    for e in events:
        assert list(VALIDATOR.iter_errors(e)) == []
        assert e["agent"] == "claude_code" and e["source_session_id"] == "sess-1" and e["agent_sub_id"] is None
    pre = {e["source_tool_call_id"]: e for e in events if e["kind"] == "pre_tool_use"}
    post = {e["source_tool_call_id"]: e for e in events if e["kind"].startswith("post_")}
    assert pre["c1"]["action_type"] == "shell_exec" and pre["c2"]["action_type"] == "file_read"
    assert post["c1"]["action_fingerprint"] == pre["c1"]["action_fingerprint"] is not None
    assert post["c1"]["metadata"]["error_class"] == "exit_nonzero"
    assert {"git_history_rewrite", "credential_in_args", "network_egress"} <= set(pre["c1"]["risk_features"])
    assert "sensitive_file_reference" in pre["c2"]["risk_features"]
    assert pre["c1"]["redaction_count"] >= 1
    assert pre["c3"]["action_fingerprint"] is None and "fingerprint_error" in pre["c3"]["metadata"]
    assert post["zz"]["tool_name"] == "WebFetch" and post["zz"]["action_type"] == "network"
    assert post["zz"]["metadata"] == {"call_seen": False}
    assert events[2]["occurred_at"] == rfc3339(1_700_000_000_002) == "2023-11-14T22:13:20.002Z"


def test_event_ids_are_deterministic_and_unique() -> None:
    a, b = one_pass(), one_pass()
    assert [e["event_id"] for e in a] == [e["event_id"] for e in b]
    assert len({e["event_id"] for e in a}) == len(a)


def test_no_original_input_or_secret_anywhere() -> None:
    out, sink = run(records())
    blob = orjson.dumps(out + sink.finish()) + orjson.dumps(unstructure(sink.state()))
    assert SECRET.encode() not in blob
    assert b"id_rsa" in blob  # a path is a summary, not a secret
    assert str(2**60).encode() not in orjson.dumps(unstructure(sink.state()))


@pytest.mark.parametrize("cut", range(len(records()) + 1))
def test_state_round_trip_equals_one_pass(cut: int) -> None:
    recs = records()
    first, sink = run(recs[:cut])
    state = structure(orjson.loads(orjson.dumps(unstructure(sink.state()))), SinkState)
    rest, sink2 = run(recs[cut:], state)
    assert first + rest + sink2.finish() == one_pass()


def test_subagent_identity() -> None:
    sub = vocab.Session(stream="", t=1, session_id="agent-7", agent_kind="sub", parent_session_id="sess-1",
                        agent_name="explorer")
    out, sink = run([sub, vocab.AssistantMessage(stream="", t=2, tool_calls=(vocab.ToolCall("c", "Bash", {"command": "ls"}),))], session=sub)
    events = out + sink.finish()
    assert all(e["agent_sub_id"] == "agent-7" and e["source_session_id"] == "sess-1" for e in events)
    main, _ = run([SESSION, vocab.AssistantMessage(stream="", t=2, tool_calls=(vocab.ToolCall("c", "Bash", {"command": "ls"}),))])
    assert main[-1]["action_fingerprint"] != events[1]["action_fingerprint"]


def test_session_start_waits_for_a_time() -> None:
    s = vocab.Session(stream="", t=None, session_id="s")
    out, _ = run([s, vocab.UserMessage(stream="", t=5000, text="hi")], session=s)
    assert out[0]["kind"] == "session_start" and out[0]["occurred_at"] == "1970-01-01T00:00:05.000Z"


@pytest.mark.parametrize("ms", [0, -1, 10**18, -(10**18)])
def test_rfc3339_never_fails(ms: int) -> None:
    assert rfc3339(ms).endswith("Z")


def test_event_times_equal_rfc3339_across_seconds_minutes_and_range() -> None:
    # The sink formats a minute once and reuses it: every event's time must still be rfc3339's.
    times = [1_700_000_000_000 + d for d in (0, 1, 999, 1000, 59_999, 60_000, 61_001, 3_600_000, 59_000, -1, -60_001)]
    times += [-1, 0, 59_999, 60_000, -62135596800000, 253402300799999, 253402300799999 - 60_000, 10**18, -(10**18)]
    sink = EventSink(SOURCE, SESSION, host=HOST, redactor=default_redactor())
    for t in times:
        ev = sink.feed(vocab.UserMessage(stream="", t=t, text="hello there"))[-1]
        assert ev["occurred_at"] == rfc3339(t), t


def test_summary_is_cut_and_flagged() -> None:
    long_cmd = "echo " + "x" * 500
    out, _ = run([SESSION, vocab.AssistantMessage(stream="", t=2, tool_calls=(vocab.ToolCall("c", "Bash", {"command": long_cmd}),))])
    pre = out[-1]
    assert pre["raw_input_truncated"] is True and len(pre["args_summary"]) <= 201
    short, _ = run([SESSION, vocab.AssistantMessage(stream="", t=2, tool_calls=(vocab.ToolCall("c", "Bash", {"command": "ls"}),))])
    assert short[-1]["raw_input_truncated"] is False and short[-1]["args_summary"] == "ls"
