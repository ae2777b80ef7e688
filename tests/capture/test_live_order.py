"""One writer, any order: the events of a turn give the same bytes whatever order they arrive in."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from capture_helpers import load_fixture, read_jsonl

import rematch_claude_code
from rematch_trace.live.capture import capture_event
from rematch_trace.store.datafolder import DataDir
from rematch_trace.testing import make_host

SID = "7c1e2a4b-5d6f-4a8b-9c0d-1e2f3a4b5c6d"
T0 = 1_790_000_000_000


def _turns(hooks: list[dict[str, Any]]) -> list[list[tuple[int, dict[str, Any]]]]:
    """The payloads with their hook times, cut into turns: each starts at a prompt (or the session's start)."""
    turns: list[list[tuple[int, dict[str, Any]]]] = [[]]
    for i, h in enumerate(hooks):
        if h["hook_event_name"] in ("UserPromptSubmit", "SessionEnd"):
            turns.append([])
        turns[-1].append((T0 + 1000 * i, h))
    return turns


def _capture(tmp_path: Path, name: str, order: list[tuple[int, dict[str, Any]]]) -> tuple[bytes, bytes]:
    data = DataDir(tmp_path / name)
    host = make_host([rematch_claude_code])
    for t, payload in order:
        capture_event(host, data, "claude_code", payload, t)
    return data.trace_path(SID).read_bytes(), data.events_path(SID).read_bytes()


@pytest.fixture
def recorded(tmp_path: Path, project: Path) -> list[list[tuple[int, dict[str, Any]]]]:
    hooks, _text = load_fixture(project, tmp_path / "absent-transcript.jsonl")
    return _turns(hooks)


def test_every_order_of_a_turn_gives_the_same_bytes(tmp_path: Path, recorded: list[list[Any]]) -> None:
    in_order = [e for turn in recorded for e in turn]
    expected = _capture(tmp_path, "in-order", in_order)
    assert b"tool_result" in expected[0] and b"post_tool_failure" in expected[1]
    rng = random.Random(15)
    for n in range(12):
        shuffled: list[tuple[int, dict[str, Any]]] = []
        for turn in recorded:
            # The prompt is synchronous: it opens its turn; the rest of the turn comes in any order.
            head, rest = (turn[:1], turn[1:]) if turn and turn[0][1]["hook_event_name"] == "UserPromptSubmit" \
                else ([], list(turn))
            if n == 0:
                rest.reverse()
            else:
                rng.shuffle(rest)
            shuffled += head + rest
        assert shuffled != in_order
        assert _capture(tmp_path, f"perm-{n}", shuffled) == expected, f"permutation {n}"


def test_a_result_before_its_call_still_pairs(tmp_path: Path, recorded: list[list[Any]]) -> None:
    first_turn = recorded[1]
    posts = [e for e in first_turn if e[1]["hook_event_name"].startswith("PostToolUse")]
    pres = [e for e in first_turn if e[1]["hook_event_name"] == "PreToolUse"]
    rest = [e for e in first_turn if e not in posts and e not in pres]
    order = [*recorded[0], rest[0], *posts, *pres, *rest[1:], *recorded[2][:1]]
    trace, _events = _capture(tmp_path, "posts-first", order)
    records = read_jsonl(DataDir(tmp_path / "posts-first").trace_path(SID))
    results = [r for r in records if r["ev"] == "tool_result"]
    assert len(results) == 5 and all(r["input"] is not None and r["args_hash"] for r in results)
    assert not any(r["ev"] == "tool_blocked" for r in records)
    assert trace


def test_a_long_turn_is_applied_in_parts(tmp_path: Path, project: Path) -> None:
    from rematch_trace.live.session_writer import MAX_HELD

    host = make_host([rematch_claude_code])
    data = DataDir(tmp_path / "data")
    base = {"session_id": "long", "cwd": str(project), "transcript_path": ""}
    capture_event(host, data, "claude_code", {**base, "hook_event_name": "UserPromptSubmit", "prompt": "go"}, T0)
    state = data.root / "live" / "long.json"
    sizes = []
    for i in range(MAX_HELD + 10):
        call = {"tool_name": "Read", "tool_use_id": f"toolu_{i:04d}", "tool_input": {"file_path": f"/x/{i}.py"}}
        capture_event(host, data, "claude_code", {**base, "hook_event_name": "PreToolUse", **call}, T0 + 2 * i + 1)
        capture_event(host, data, "claude_code", {**base, "hook_event_name": "PostToolUse", **call,
                                                  "tool_response": {"file": {"content": "x"}}}, T0 + 2 * i + 2)
        sizes.append(state.stat().st_size)
    assert max(sizes) < 200_000
    trace = read_jsonl(data.trace_path("long"))
    assert len([r for r in trace if r["ev"] == "tool_result"]) >= MAX_HELD // 2


def test_a_service_request_captures_like_a_hook_process(tmp_path: Path, recorded: list[list[Any]]) -> None:
    """What the resident service's ``hook_event`` handler runs gives the same bytes as in-process capture."""
    from rematch_trace.live.capture import BadPayload, handle_hook_event

    in_order = [e for turn in recorded for e in turn]
    expected = _capture(tmp_path, "direct", in_order)
    host = make_host([rematch_claude_code])
    data = DataDir(tmp_path / "service")
    for t, payload in in_order:
        request = {"request_kind": "hook_event", "adapter": "claude_code", "received_at_ms": t,
                   "host_payload": payload}
        handle_hook_event(request, data, host)
        # Delivered again (a late reply, then the in-process fallback): applied once.
        handle_hook_event(request, data, host)
    assert (data.trace_path(SID).read_bytes(), data.events_path(SID).read_bytes()) == expected
    with pytest.raises(BadPayload):
        handle_hook_event({"adapter": "claude_code", "received_at_ms": "soon", "host_payload": {}}, data, host)


def test_other_plugins_do_not_answer_for_a_live_session(tmp_path: Path, recorded: list[list[Any]]) -> None:
    """The per-source hooks of a live session go to the plugin that translated it, as for a claimed file."""
    import rematch_codex
    import rematch_omp
    from rematch_trace import hookimpl

    class Greedy:
        """A plugin of another harness: by the per-source contract it need not check whose source it is."""

        __name__ = "greedy"

        @hookimpl
        def classify_action(self, tool: str) -> str:
            return "network"

    in_order = [e for turn in recorded for e in turn]
    alone = _capture(tmp_path, "alone", in_order)
    host = make_host([rematch_claude_code, rematch_codex, rematch_omp, Greedy()])  # the others are asked first
    assert host.live_plugin("claude_code") == "rematch_claude_code" and host.live_plugin("nobody") == ""
    data = DataDir(tmp_path / "all")
    for t, payload in in_order:
        capture_event(host, data, "claude_code", payload, t)
    assert (data.trace_path(SID).read_bytes(), data.events_path(SID).read_bytes()) == alone
    kinds = {e["tool_name"]: e["action_type"] for e in read_jsonl(data.events_path(SID)) if e["tool_name"]}
    assert kinds == {"Read": "file_read", "Edit": "file_edit", "Bash": "shell_exec"}
