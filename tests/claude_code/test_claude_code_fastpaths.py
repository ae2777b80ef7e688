"""The translator's fast paths give what the general path gives (Hypothesis): usage counts, output sizes."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rematch_claude_code.translate import HEAD_CHARS, _int, _usage, measure
from rematch_trace.host.text import clean, utf8_len

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3),
)
_VALUES = st.recursive(_SCALARS, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=3), kids),
                       max_leaves=6)
_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def _reference(u: dict[str, Any]) -> list[int]:
    """The counts as _int gives them, one call per count (the usage rule as first written), then the
    1-hour share of the cache write (never more than the write)."""
    cache_write = _int(u.get("cache_creation_input_tokens"))
    breakdown = u.get("cache_creation")
    hour = 0
    if isinstance(breakdown, dict):
        total = sum(_int(x) for x in breakdown.values())
        if total > 0:
            cache_write = total
        hour = _int(breakdown.get("ephemeral_1h_input_tokens"))
    return [_int(u.get("input_tokens")), _int(u.get("output_tokens")), _int(u.get("cache_read_input_tokens")),
            cache_write, min(hour, cache_write)]


@settings(max_examples=400, deadline=None)
@given(
    st.fixed_dictionaries({}, optional={k: _VALUES for k in _KEYS}),
    st.one_of(_VALUES, st.dictionaries(st.text(max_size=12), _SCALARS, max_size=4)),
)
def test_usage_counts_are_ints_rule(fields: dict[str, Any], breakdown: Any) -> None:
    usage = {**fields, "cache_creation": breakdown}
    expected = _reference(usage)
    got = _usage(usage, _int(usage.get("output_tokens")))
    assert got == expected
    assert [type(x) for x in got] == [int] * 5  # never a float or a bool that compares equal


def test_a_real_usage_object() -> None:
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 17443,
             "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 8052},
             "output_tokens": 8, "service_tier": "standard"}
    assert _usage(usage, 8) == [3, 8, 17443, 8052, 8052]  # all of its cache write for an hour


# ASCII, other scripts, astral characters and lone surrogates (which a JSON escape can spell).
_CHARS = st.one_of(
    st.sampled_from(["a", "\n", "\u00e9", "\u20ac", "\U0001f600", "\ud800", "\udfff"]),
    st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=()),
)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_CHARS, max_size=40), st.integers(min_value=0, max_value=HEAD_CHARS // 8 + 2),
       st.text(alphabet=_CHARS, max_size=6))
def test_an_output_is_measured_as_the_general_rule_says(piece: str, times: int, tail: str) -> None:
    content = piece * times + tail  # crosses the head's length now and then
    size, head = measure(content)
    assert size == utf8_len(content)
    assert head == clean(content[:HEAD_CHARS])
    head.encode("utf-8")  # the head always has a UTF-8 spelling


def test_an_output_with_a_lone_surrogate_past_the_head() -> None:
    content = "é" * HEAD_CHARS + "\ud800"
    assert measure(content) == (2 * HEAD_CHARS + 3, "é" * HEAD_CHARS)
