"""Exact action binding: the fingerprint's identity, order-independence and exactness."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rematch_trace.errors import NonExactNumber
from rematch_trace.security.fingerprint import action_fingerprint

BASE: dict[str, Any] = {
    "provider": "claude_code", "session": "s1", "turn": None, "tool_call_id": "c1",
    "tool_name": "Bash", "cwd": "/w", "tool_input": {"command": "ls -la", "timeout": 5},
}


def fp(**over: Any) -> str:
    return action_fingerprint(**{**BASE, **over})


def test_same_input_same_fingerprint() -> None:
    assert fp() == fp()
    assert len(fp()) == 64 and all(c in "0123456789abcdef" for c in fp())


def test_key_order_does_not_matter() -> None:
    assert fp(tool_input={"timeout": 5, "command": "ls -la"}) == fp()
    assert fp(tool_input={"a": {"y": 1, "x": [1, {"q": 1, "p": 2}]}}) == fp(
        tool_input={"a": {"x": [1, {"p": 2, "q": 1}], "y": 1}}
    )


@pytest.mark.parametrize(
    "field,value",
    [
        ("provider", "codex"), ("session", "s2"), ("turn", "t1"), ("tool_call_id", "c2"),
        ("tool_name", "Read"), ("cwd", "/w2"), ("tool_input", {"command": "ls -la ", "timeout": 5}),
        ("tool_input", {"command": "ls -la", "timeout": 6}), ("tool_input", {"command": "ls -la", "timeout": 5.5}),
        ("tool_input", {"command": "ls -la", "timeout": "5"}), ("agent_sub_id", "sub-1"),
    ],
)
def test_every_bound_field_changes_it(field: str, value: Any) -> None:
    assert fp(**{field: value}) != fp()


def test_subagent_scope_is_bound() -> None:
    assert fp(agent_sub_id="a") != fp(agent_sub_id="b")
    assert fp(agent_sub_id=None) != fp(agent_sub_id="")


def test_fields_cannot_be_shifted_into_each_other() -> None:
    assert fp(session="a", tool_call_id="bc") != fp(session="ab", tool_call_id="c")
    assert fp(cwd="/w", tool_name="Bash") != fp(cwd="/wBash", tool_name="")


@pytest.mark.parametrize("number", [math.nan, math.inf, Decimal("NaN"), object()])
def test_non_finite_numbers_are_rejected(number: Any) -> None:
    with pytest.raises(NonExactNumber):
        fp(tool_input={"n": number})


def test_numbers_beyond_binary64_are_bound_exactly() -> None:
    assert fp(tool_input={"n": 2**53}) != fp(tool_input={"n": 2**53 + 1})
    assert fp(tool_input={"n": 2**64}) != fp(tool_input={"n": float(2**64)})
    assert fp(tool_input={"n": Decimal("0.1000000000000000000001")}) != fp(tool_input={"n": 0.1})


def test_exact_numbers_are_accepted() -> None:
    assert fp(tool_input={"n": 2**53 - 1}) != fp(tool_input={"n": 2**53 - 2})
    assert fp(tool_input={"n": Decimal("0.5")}) == fp(tool_input={"n": 0.5})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3),
    max_leaves=8,
)


@given(json_values, json_values)
def test_different_inputs_never_share(a: Any, b: Any) -> None:
    if a == b and type(a) is type(b) and repr(a) == repr(b):
        assert fp(tool_input=a) == fp(tool_input=b)
    elif repr(a) != repr(b):
        # Distinct JSON values (bools and ints compare equal in Python, not in JSON).
        from rematch_trace.trace.canonical import canonical_json

        if canonical_json(a) != canonical_json(b):
            assert fp(tool_input=a) != fp(tool_input=b)


# SessionFingerprints: the sink's per-session fingerprinter gives action_fingerprint's digest.
_member = st.text(max_size=6) | st.sampled_from(["\ud800", "a\udfff", "é", "\x00", '"', "\\"])


@given(
    st.sampled_from(["claude_code", "codex", "bad\ud800"]),
    _member,
    _member,
    st.none() | _member,
    st.lists(st.tuples(st.none() | _member | st.just(7), _member, _member, json_values), min_size=1, max_size=6),
)
def test_session_fingerprints_equal_action_fingerprint(
    provider: str, session: str, cwd: str, sub: str | None, calls: list[tuple[Any, str, str, Any]]
) -> None:
    from rematch_trace.security.fingerprint import SessionFingerprints

    fps = SessionFingerprints(provider, session, cwd, sub)
    for turn, call_id, name, tool_input in calls * 2:  # twice: the same turn objects come back
        want = action_fingerprint(provider, session, turn, call_id, name, cwd, tool_input, sub)
        assert fps(turn, call_id, name, tool_input) == want


def test_session_fingerprints_follow_the_turn_and_reject_what_action_fingerprint_rejects() -> None:
    from rematch_trace.security.fingerprint import SessionFingerprints

    fps = SessionFingerprints("claude_code", "s1", "/w", None)
    first = fps("t1", "c1", "Bash", {"command": "ls"})
    assert fps("t2", "c1", "Bash", {"command": "ls"}) != first
    assert fps("t1", "c1", "Bash", {"command": "ls"}) == first == fp(turn="t1", tool_input={"command": "ls"})
    assert fps(None, "c1", "Bash", {"command": "ls"}) == fp(tool_input={"command": "ls"})
    with pytest.raises(NonExactNumber):
        fps("t1", "c1", "Bash", {"n": math.nan})
