"""Pausing and resuming the translation, bounded state, and untrusted input."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cc_fixtures import Lines, call, raw_records, session_path, source_of, text, translate, write
from hypothesis import given, settings
from hypothesis import strategies as st

import rematch_claude_code as plugin
from rematch_trace.host.source import RawRecord, Source
from rematch_trace.host.vocab import AssistantMessage, Session, UserMessage
from rematch_trace.store.states import state_dumps, state_loads


def _rich_session(b: Lines) -> list[dict[str, Any]]:
    """A session touching every rule that holds state across lines."""
    root = b.user("sub task")
    root.update(isSidechain=True, parentUuid=None)
    sub_answer = b.assistant("s1", text("sub answer"))
    sub_answer.update(isSidechain=True, parentUuid=root["uuid"])
    cmd = "<command-name>/pdf</command-name>\n<command-args>a.pdf</command-args>"
    return [
        b.line("file-history-snapshot"),
        b.user("go"),
        b.assistant("m1", text("one")),
        b.assistant("m1", call("toolu_1", "Task", {"prompt": "p"})),
        root,
        sub_answer,
        b.result("toolu_1", "sub done"),
        b.assistant("m1", call("toolu_2", "Skill", {"skill": "pdf"}), usage={"output_tokens": 9}),
        b.result("toolu_2", "Launching skill: pdf"),
        b.user([text("[Request interrupted by user]")]),
        b.user(cmd),
        b.user("Base directory for this skill: /s", isMeta=True),
        b.assistant("m2", call("toolu_3")),
        b.result("toolu_3", "x", is_error=True),
        b.system("compact_boundary", compactMetadata={"trigger": "manual"}),
        b.user("<command-name>/exit</command-name>"),
    ]


class _Snapshotting:
    """Records the plugin state at the moment the input runs out, as the core does."""

    def __init__(self, records: list[RawRecord], state: dict[str, Any], out: list[Any]) -> None:
        self._it = iter(records)
        self._state = state
        self._out = out
        self.snapshot: dict[str, Any] | None = None
        self.emitted_before_end = 0

    def __iter__(self) -> Iterator[RawRecord]:
        return self

    def __next__(self) -> RawRecord:
        try:
            return next(self._it)
        except StopIteration:
            if self.snapshot is None:
                self.snapshot = state_loads(state_dumps(self._state))  # as the core saves it
                self.emitted_before_end = len(self._out)
            raise


def _run_part(
    src: Source, records: list[RawRecord], state: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    out: list[Any] = []
    feed = _Snapshotting(records, state, out)
    it = plugin.to_trace_records(src, feed, state)
    assert it is not None
    for rec in it:
        out.append(rec)
    assert feed.snapshot is not None
    return out[: feed.emitted_before_end], feed.snapshot


def test_resuming_at_any_record_gives_the_full_import(tmp_path: Path) -> None:
    path = write(session_path(tmp_path), _rich_session(Lines()))
    full = translate(path)
    src = source_of(path)
    records = raw_records(src)
    for k in range(len(records) + 1):
        before, snapshot = _run_part(src, records[:k], {})
        rest = plugin.to_trace_records(src, iter(records[k:]), snapshot)
        assert rest is not None
        assert before + list(rest) == full, f"split at record {k}"


def test_state_stays_bounded_over_a_long_session(tmp_path: Path) -> None:
    b = Lines()
    lines: list[dict[str, Any]] = []
    for i in range(3000):
        lines += [
            b.user(f"prompt {i}"),
            b.assistant(f"m{i}", call(f"toolu_{i}")),
            b.result(f"toolu_{i}", "ok"),
        ]
    path = write(session_path(tmp_path), lines)
    src = source_of(path)
    state: dict[str, Any] = {}
    it = plugin.to_trace_records(src, iter(raw_records(src)), state)
    assert it is not None
    assert sum(isinstance(r, AssistantMessage) for r in it) == 3000
    assert len(state_dumps(state)) < 64 * 1024


def test_malformed_lines_are_skipped_without_crashing(tmp_path: Path) -> None:
    b = Lines()
    odd: list[Any] = [
        {"type": "user"},
        {"type": "user", "message": None},
        {"type": "user", "message": {"content": 5}},
        {
            "type": "user",
            "message": {"content": [None, 3, {"type": "tool_result"}, {"type": "text", "text": 7}]},
        },
        {"type": "assistant", "message": "x"},
        {
            "type": "assistant",
            "message": {"id": 5, "content": [{"type": "tool_use", "id": None}], "usage": []},
        },
        {"type": "assistant", "message": {"id": "mx", "content": "plain", "usage": {"output_tokens": "9"}}},
        {"type": "system", "subtype": "compact_boundary", "compactMetadata": 3},
        {"type": "system", "subtype": "local_command", "content": ["x"]},
        {"type": "attachment", "attachment": {"type": "queued_command", "prompt": 3}},
        {
            "type": "user",
            "sessionId": 7,
            "uuid": [],
            "timestamp": "not a time",
            "message": {"content": "typed"},
        },
        {"type": "brand-new-type", "sessionId": "11111111-2222-3333-4444-555555555555"},
    ]
    path = write(session_path(tmp_path), [b.user("first"), *odd, b.user("last")])
    out = translate(path)
    texts = [m.text for m in out if isinstance(m, UserMessage)]
    assert texts[0] == "first" and texts[-1] == "last"
    assert isinstance(out[0], Session)


_scalar = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=8))
_value = st.recursive(
    _scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_block = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            ["text", "tool_use", "tool_result", "thinking", "image", "web_search_tool_result"]
        )
    },
    optional={
        "text": _value,
        "id": _value,
        "name": _value,
        "input": _value,
        "tool_use_id": _value,
        "content": _value,
        "is_error": _value,
    },
)
_line = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "assistant", "system", "attachment", "progress", "summary"])},
    optional={
        "sessionId": st.one_of(st.just("11111111-2222-3333-4444-555555555555"), _value),
        "isSidechain": _value,
        "isMeta": _value,
        "uuid": _value,
        "parentUuid": _value,
        "timestamp": _value,
        "subtype": st.one_of(st.sampled_from(["compact_boundary", "local_command"]), _value),
        "toolUseResult": _value,
        "attachment": _value,
        "message": st.fixed_dictionaries(
            {},
            optional={
                "id": _value,
                "model": _value,
                "usage": _value,
                "stop_reason": _value,
                "content": st.one_of(_value, st.lists(_block, max_size=3)),
            },
        ),
    },
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_line, max_size=12))
def test_any_shape_of_line_translates_without_crashing(values: list[dict[str, Any]]) -> None:
    src = Source("claude_code", Path("/nowhere/11111111-2222-3333-4444-555555555555.jsonl"))
    records = [RawRecord(i + 1, 0, 0, v) for i, v in enumerate(values)]
    state: dict[str, Any] = {}
    it = plugin.to_trace_records(src, iter(records), state)
    assert it is not None
    out = list(it)
    assert isinstance(out[0], Session) or any(isinstance(r, Session) for r in out)
    # The state as the core saves it (a sealed value is saved as its place and digest).
    state_dumps(state)
