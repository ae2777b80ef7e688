"""One walk of a tool input serves redaction's trigger check and the risk rules' text.

:class:`~rematch_trace.security.strings.InputStrings` must give exactly what
the two separate walks gave: ``strings_of``'s former walk (limit edge included) and, for the
trigger check, a text holding a trigger exactly when the old interleaved join
(every string, key and scalar in walk order) did.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rematch_trace.host.exactnum import ExactNumber
from rematch_trace.security.redact import _ASSIGN_TRIGGERS, _joined, default_redactor
from rematch_trace.security.risk import strings_of
from rematch_trace.security.strings import InputStrings, input_strings

R = default_redactor()


def reference_strings_of(value: Any, limit: int) -> str:
    """The walk ``strings_of`` made before it was shared, kept here as the reference."""
    parts: list[str] = []
    size = 0
    stack = [value]
    while stack and size < limit:
        v = stack.pop()
        if isinstance(v, str):
            parts.append(v)
            size += len(v) + 1
        elif isinstance(v, dict):
            for k, x in v.items():
                if isinstance(k, str):
                    parts.append(k)
                    size += len(k) + 1
                stack.append(x)
        elif isinstance(v, list | tuple):
            stack.extend(reversed(v))
    return "\n".join(parts)[:limit]

_TEXT = st.text(alphabet=st.sampled_from(list("ab k-_:=/\n\tAKIAghp_passtokenİ")), max_size=30)
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), _TEXT)
_VALUE = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_TEXT, inner, max_size=4)),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(_VALUE, st.integers(min_value=0, max_value=80))
def test_text_is_strings_of_at_every_limit(value: Any, limit: int) -> None:
    assert InputStrings(value, limit).text() == strings_of(value, limit) == reference_strings_of(value, limit)


@settings(max_examples=400, deadline=None)
@given(_VALUE)
def test_trigger_check_agrees_with_the_interleaved_join(value: Any) -> None:
    assert R._may_hold(InputStrings(value).trigger_text()) == R._may_hold(_joined(value))


def test_limit_edge_where_the_last_part_ends_exactly_at_the_limit() -> None:
    # "abcd" + newline is 5: strings_of stops with 4 characters, not the separator after them.
    value = ["abcd", "efgh"]
    assert InputStrings(value, 5).text() == reference_strings_of(value, 5) == "abcd"
    assert InputStrings(value, 6).text() == reference_strings_of(value, 6) == "abcd\ne"


def test_non_string_keys_and_exotic_scalars_reach_the_trigger_check_only() -> None:
    value = {1: "x", "k": [Decimal("1.5"), ExactNumber("1e400"), None, 2.5]}
    walked = InputStrings(value)
    assert walked.text() == reference_strings_of(value, 64 * 1024)
    assert R._may_hold(walked.trigger_text()) == R._may_hold(_joined(value))
    assert set(walked.others) >= {"1", "None", "2.5"}


def test_no_trigger_holds_a_newline() -> None:
    # What makes the order of the trigger text irrelevant: a trigger never spans two strings.
    exact = [t for t, _ in R._exact] + [t for t, _ in R._folded] + list(_ASSIGN_TRIGGERS)
    assert exact and all("\n" not in t for t in exact)


def test_the_walk_is_shared_by_identity() -> None:
    value = {"command": "echo hi"}
    assert input_strings(value) is input_strings(value)
    assert input_strings(dict(value)) is not input_strings(value)
