"""Flag rules, the error-cluster window at its edges."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rematch_trace import flag_reasons
from rematch_trace.trace.flags import FlagTracker


def results(pattern: str) -> list[dict[str, Any]]:
    return [{"seq": i, "ev": "tool_result", "is_error": c == "x"} for i, c in enumerate(pattern)]


def test_three_errors_in_six() -> None:
    assert flag_reasons(results("x....xx")) == []  # spans 7
    assert flag_reasons(results("x...xx")) == ["error_cluster"]  # exactly 6
    assert flag_reasons(results("xx")) == []
    assert flag_reasons(results("xxx")) == ["error_cluster"]
    assert flag_reasons(results("x.x.x.x")) == ["error_cluster"]
    assert flag_reasons(results("x..x..x..x")) == []


def test_window_counts_only_tool_results() -> None:
    recs = results("xx") + [{"seq": 2, "ev": "turn_end"}] * 10 + [{"seq": 13, "ev": "tool_result", "is_error": True}]
    assert flag_reasons(recs) == ["error_cluster"]


def test_cluster_seqs() -> None:
    t = FlagTracker()
    for r in results("..x.xx..x"):
        t.observe(r)
    assert t.seqs() == {"error_cluster": [2, 4, 5, 8]}


def test_redirect_and_mark() -> None:
    recs = [
        {"seq": 1, "ev": "input", "prelabel": "none"},
        {"seq": 2, "ev": "input", "prelabel": "negation"},
        {"seq": 3, "ev": "input", "prelabel": "mark:scope"},
        {"seq": 4, "ev": "mark", "class": "correction"},
    ]
    t = FlagTracker()
    for r in recs:
        t.observe(r)
    assert t.reasons() == ["redirect", "mark"]
    assert t.seqs() == {"redirect": [2], "mark": [3, 4]}
    for label in ("interrupt", "revert", "reprompt"):
        assert flag_reasons([{"seq": 0, "ev": "input", "prelabel": label}]) == ["redirect"]
    assert flag_reasons([{"seq": 0, "ev": "input", "prelabel": "none"}]) == []


def test_state_round_trip() -> None:
    t = FlagTracker()
    for r in results("x.x"):
        t.observe(r)
    t2 = FlagTracker.from_state(t.to_state())
    t2.observe({"seq": 3, "ev": "tool_result", "is_error": True})
    assert t2.reasons() == ["error_cluster"]


def _clustered(errors: list[bool]) -> list[int]:
    """The rule as the schema states it, by brute force: every error inside some window of
    CLUSTER_WINDOW consecutive results holding at least CLUSTER_ERRORS errors."""
    from rematch_trace.trace.flags import CLUSTER_ERRORS, CLUSTER_WINDOW

    found: set[int] = set()
    for end in range(1, len(errors) + 1):
        window = range(max(0, end - CLUSTER_WINDOW), end)
        hits = [i for i in window if errors[i]]
        if len(hits) >= CLUSTER_ERRORS:
            found.update(hits)
    return sorted(found)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.booleans(), max_size=40), st.integers(min_value=0, max_value=40))
def test_error_cluster_matches_the_rule_and_survives_a_restore(errors: list[bool], cut: int) -> None:
    # The tracker skips the window scan after a result without error: still exactly the rule,
    # each seq once, in order, also when continued from a saved state at any point.
    t = FlagTracker()
    for i, err in enumerate(errors):
        if i == cut:
            t = FlagTracker.from_state(t.to_state())
        t.observe({"seq": i, "ev": "tool_result", "is_error": err})
        assert t.error_cluster == _clustered(errors[: i + 1])
