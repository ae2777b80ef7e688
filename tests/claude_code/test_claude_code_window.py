"""The translator's bounded id windows: O(1) lookups that answer exactly as a scan of the saved list."""

from __future__ import annotations

import random
from typing import Any

from rematch_claude_code.translate import _Window


def _reference(items: list[Any], ops: list[str], limit: int, always: bool = False) -> list[bool]:
    """The windows' rule as a plain list scan (the code before the counts): add when not present
    (line uuids) or always (closed message ids)."""
    answers = []
    for x in ops:
        present = x in items
        answers.append(present)
        if always or not present:
            items.append(x)
            if len(items) > limit:
                del items[0]
    return answers


def _window(items: list[Any], ops: list[str], limit: int, always: bool = False) -> list[bool]:
    w = _Window(items, limit)
    answers = []
    for x in ops:
        present = x in w
        answers.append(present)
        if always or not present:
            w.add(x)
    return answers


def test_the_window_answers_as_the_list_scan_and_leaves_the_same_list() -> None:
    rng = random.Random(7)
    for limit in (1, 3, 32, 64):
        for _ in range(50):
            pool = [f"id-{i}" for i in range(rng.randint(1, 3 * limit + 2))]
            ops = [rng.choice(pool) for _ in range(rng.randint(0, 6 * limit))]
            saved = [rng.choice(pool) for _ in range(rng.randint(0, limit))]
            for always in (False, True):
                ref_items, win_items = list(saved), list(saved)
                assert _window(win_items, ops, limit, always) == _reference(ref_items, ops, limit, always)
                assert win_items == ref_items


def test_a_saved_list_with_repeats_and_foreign_entries_is_counted_exactly() -> None:
    # A saved state is JSON: repeats (or a number) in it must not let an id be forgotten too early.
    saved: list[Any] = ["a", "a", 7, "b"]
    ops = ["a", "c", "a", "d", "a", "e", "a", "b", "f", "b"]
    ref_items, win_items = list(saved), list(saved)
    assert _window(win_items, ops, 4) == _reference(ref_items, ops, 4)
    assert win_items == ref_items


def test_the_window_changes_the_state_list_in_place() -> None:
    state: dict[str, Any] = {"ru": ["x"]}
    w = _Window(state["ru"], 2)
    w.add("y")
    w.add("z")
    assert state["ru"] == ["y", "z"]
    assert "x" not in w and "y" in w and "z" in w
