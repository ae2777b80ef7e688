"""Canonical JSON (RFC 8785) and args_hash."""

from __future__ import annotations

import hashlib
from decimal import Decimal

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from rematch_trace import args_hash, canonical_json
from rematch_trace.errors import NonExactNumber


def test_key_order_and_spacing() -> None:
    assert canonical_json({"b": 1, "a": [True, None, "x"]}) == b'{"a":[true,null,"x"],"b":1}'
    assert args_hash({"b": 1, "a": 2}) == args_hash({"a": 2, "b": 1})
    assert args_hash({"a": 1}) == hashlib.sha256(b'{"a":1}').hexdigest()


def test_numbers_in_es6_form() -> None:
    assert canonical_json([1e21, 0.1, 100.0, -0.0]) == b"[1e+21,0.1,100,0]"


def test_utf16_key_order() -> None:
    # U+FFFF sorts after U+1F600 by code point but before it in UTF-16
    value = {"\U0001f600": 1, "\uffff": 2}
    assert canonical_json(value) == rfc8785.dumps(value)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), Decimal("NaN"), Decimal("-Infinity"), object()])
def test_non_finite_and_non_json_rejected(bad: object) -> None:
    with pytest.raises(NonExactNumber):
        canonical_json({"n": bad})


@pytest.mark.parametrize(("value", "text"), [
    (2**53, b"9007199254740992"), (-(2**53) - 1, b"-9007199254740993"), (10**30, b"1e+30"),
    (2**64 + 1, b"18446744073709551617"), (Decimal("1e400"), b"1e+400"),
    (Decimal("0.1000000000000000000000001"), b"0.1000000000000000000000001"),
])
def test_numbers_beyond_binary64_written_exactly(value: object, text: bytes) -> None:
    # Where RFC 8785 would round (or refuse), the exact value is written instead.
    assert canonical_json({"n": value}) == b'{"n":' + text + b"}"


def test_exact_decimal_accepted() -> None:
    assert canonical_json({"n": Decimal("0.5")}) == b'{"n":0.5}'


def test_lone_surrogates_do_not_collide() -> None:
    a = args_hash({"s": "\ud800"})
    b = args_hash({"s": "\\ud800"})
    assert a != b


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda c: st.lists(c, max_size=5) | st.dictionaries(st.text(max_size=8), c, max_size=5),
    max_leaves=25,
)


@given(json_values)
@settings(max_examples=300)
def test_matches_reference_implementation(value: object) -> None:
    try:
        expected = rfc8785.dumps(value)
    except UnicodeEncodeError:
        return  # lone surrogates: no canonical UTF-8 form exists
    assert canonical_json(value) == expected


@pytest.mark.parametrize("value", ["x\ud800", {"s": "\udfff"}, {"a": ["ok", "x\ud800"], "b": 1}, [{"k": "\ud83d"}]])
def test_lone_surrogate_values_take_the_escaped_path(value: object) -> None:
    # Strings are not checked before orjson (it refuses a lone surrogate, which sends the value
    # to the exact path all the same): escaped, and marked with a byte valid UTF-8 never holds.
    def safe(v: object) -> object:
        if isinstance(v, str):
            return v.encode("utf-8", "backslashreplace").decode("utf-8")
        if isinstance(v, list):
            return [safe(x) for x in v]
        if isinstance(v, dict):
            return {k: safe(x) for k, x in v.items()}
        return v
    assert canonical_json(value) == b"\xff" + rfc8785.dumps(safe(value))
