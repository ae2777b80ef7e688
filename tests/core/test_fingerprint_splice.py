"""The fingerprint splices the input's canonical bytes: equal to canonicalising the whole."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from rematch_trace.security.events import rfc3339
from rematch_trace.security.fingerprint import action_fingerprint, fingerprint_container
from rematch_trace.trace.canonical import canonical_json

values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=20),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=12), c, max_size=4),
    max_leaves=15,
)
texts = st.text(max_size=30)


@given(values, texts, texts, texts, st.none() | texts)
@settings(max_examples=300)
def test_splice_equals_whole(tool_input: object, session: str, call: str, cwd: str, sub: str | None) -> None:
    whole = canonical_json(fingerprint_container("codex", session, None, call, "shell", cwd, tool_input, sub))
    assert action_fingerprint("codex", session, None, call, "shell", cwd, tool_input, sub) == hashlib.sha256(
        whole
    ).hexdigest()


def test_session_named_like_the_key_does_not_confuse_it() -> None:
    tricky = '"tool_input":null'
    whole = canonical_json(fingerprint_container("omp", tricky, None, tricky, tricky, tricky, {"a": 1}, tricky))
    assert action_fingerprint("omp", tricky, None, tricky, tricky, tricky, {"a": 1}, tricky) == hashlib.sha256(
        whole
    ).hexdigest()


def test_rfc3339_edges() -> None:
    assert rfc3339(0) == "1970-01-01T00:00:00.000Z"
    assert rfc3339(-1) == "1969-12-31T23:59:59.999Z"
    assert rfc3339(-62135596800000) == "0001-01-01T00:00:00.000Z"
    assert rfc3339(253402300799999) == "9999-12-31T23:59:59.999Z"
    assert rfc3339(10**20) == "9999-12-31T23:59:59.999Z"
