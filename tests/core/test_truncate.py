"""Byte limits: UTF-8 cuts at character boundaries, tool inputs within 8 KiB."""

from __future__ import annotations

import re

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from rematch_trace.trace.truncate import INPUT_LIMIT, TEXT_LIMIT, cut_utf8, truncate_input


def test_cut_exact_limits() -> None:
    assert cut_utf8("a" * TEXT_LIMIT, TEXT_LIMIT) == "a" * TEXT_LIMIT
    assert len(cut_utf8("a" * (TEXT_LIMIT + 1), TEXT_LIMIT).encode()) == TEXT_LIMIT


def test_cut_never_splits_a_character() -> None:
    text = "a" + "€" * 10000  # 3 bytes each: the limit falls inside one
    out = cut_utf8(text, TEXT_LIMIT)
    assert len(out.encode()) <= TEXT_LIMIT
    assert len(out.encode()) > TEXT_LIMIT - 3
    assert text.startswith(out)
    emoji = "😀" * 5000
    out = cut_utf8(emoji, 2048)
    assert len(out.encode()) == 2048 and set(out) == {"😀"}


@given(st.text(max_size=3000), st.integers(min_value=0, max_value=4000))
@settings(max_examples=200)
def test_cut_property(text: str, limit: int) -> None:
    out = cut_utf8(text, limit)
    assert text.startswith(out)
    data = out.encode("utf-8", "surrogatepass")
    assert len(data) <= limit
    full = text.encode("utf-8", "surrogatepass")
    if len(full) > limit:
        # maximal: the next character would not fit
        assert len(data) + len(text[len(out)].encode("utf-8", "surrogatepass")) > limit


def test_small_input_kept() -> None:
    value = {"command": "ls", "n": 3, "nested": {"a": [1, 2]}}
    assert truncate_input(value) == value


def test_long_strings_cut_with_exact_count() -> None:
    value = {"content": "x" * 20000, "file_path": "/a/b.py", "flag": True}
    out = truncate_input(value)
    assert set(out) == set(value)
    assert len(orjson.dumps(out)) <= INPUT_LIMIT
    m = re.fullmatch(r"(x*)…\[\+(\d+)\]", out["content"])
    assert m and len(m.group(1)) + int(m.group(2)) == 20000
    assert out["file_path"] == "/a/b.py" and out["flag"] is True


def test_many_strings_share_the_budget() -> None:
    value = {f"k{i}": "é" * 3000 for i in range(10)}
    out = truncate_input(value)
    assert list(out) == list(value)
    assert len(orjson.dumps(out)) <= INPUT_LIMIT
    for v in out.values():
        kept, n = re.fullmatch(r"(é*)…\[\+(\d+)\]", v).groups()  # type: ignore[union-attr]
        assert len(kept) + int(n) == 3000


def test_huge_arrays_still_fit() -> None:
    value = {"items": list(range(10000))}
    out = truncate_input(value)
    assert "items" in out and len(orjson.dumps(out)) <= INPUT_LIMIT


@given(st.recursive(st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=5000),
                    lambda c: st.lists(c, max_size=8) | st.dictionaries(st.text(max_size=10), c, max_size=8),
                    max_leaves=40))
@settings(max_examples=150, deadline=None)
def test_truncate_property(value: object) -> None:
    out = truncate_input(value)
    assert len(orjson.dumps(out)) <= INPUT_LIMIT
