"""Issue 29: one adversarial frame must not freeze the codec, nor the service around it.

The codec's scan used to search for string literals from every quote of the payload,
so ``"\\`` repeated cost quadratic time (64 KB: 23 s) while ``re`` held the GIL. These
tests hold the decoder to linear work and to its deadline, and a real ``rematch serve``
to answering a second connection while a 1 MiB bad frame is refused.

The linearity property counts the characters the scan reads for adversarial payloads
(Hypothesis over repeated escapes, quotes, backslashes, surrogates, nesting, long strings)
at 32 KiB and 1 MiB: at most two per byte. Counted, not timed: ``bench/ipc.py`` times them.
"""

from __future__ import annotations

import json
import struct
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from adversarial_frames import ATOMS, NAMED, payload
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from live_helpers import exchange_raw, frame, pre_tool_use, running_service

from rematch_trace.live import client, paths
from rematch_trace.live.ipc import codec
from rematch_trace.live.ipc.codec import MAX_REQUEST_BYTES, MAX_STRING_BYTES, DecodeError, decode_payload
from rematch_trace.live.ipc.messages import check_reply

SMALL, BIG = 32 << 10, 1 << 20
#: The scan's window (a literal near its edges is cut across two).
WINDOW: int = getattr(codec, "_WINDOW", 64 << 10)
units = st.lists(st.sampled_from(ATOMS), min_size=1, max_size=6).map(b"".join)
prefixes = st.sampled_from([b"", b"[", b'{"a":"', b'{"a":[', b'"'])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prefixes, units)
@example(*NAMED["quote_backslash"])
@example(*NAMED["quotes"])
@example(*NAMED["backslashes"])
@example(*NAMED["escaped_quotes"])
@example(*NAMED["open_string_escapes"])
@example(*NAMED["surrogates"])
@example(*NAMED["empty_strings"])
@example(*NAMED["deep_nesting"])
@example(*NAMED["brackets"])
@example(*NAMED["long_strings"])
@example(*NAMED["mixed"])
def test_decode_work_is_linear_in_the_payload(prefix: bytes, unit: bytes) -> None:
    """The scan reads each position of an adversarial payload at most twice, at 32 KiB and at 1 MiB.

    Counted, not timed (a loaded machine makes timings noisy; ``bench/ipc.py`` has the ns per byte
    of each shape): the parser after the scan is the standard library's, linear by construction.
    """
    with pytest.MonkeyPatch.context() as mp:
        token, rest = CountingPattern(codec._TOKEN), CountingPattern(codec._REST)
        mp.setattr(codec, "_TOKEN", token)
        mp.setattr(codec, "_REST", rest)
        for size in (SMALL, BIG):
            token.chars = rest.chars = 0
            data = payload(prefix, unit, size)
            try:
                decode_payload(data, deadline=time.monotonic() + 600)
            except DecodeError:
                pass
            assert token.chars + rest.chars <= 2 * len(data), (prefix, unit[:20], size, token.chars, rest.chars)


class CountingPattern:
    """A compiled pattern that counts the characters it reads (all of a window for ``findall``)."""

    def __init__(self, pattern: Any) -> None:
        self.pattern = pattern
        self.chars = 0

    def findall(self, text: str, pos: int = 0, endpos: int = 1 << 62) -> Any:
        self.chars += min(endpos, len(text)) - pos
        return self.pattern.findall(text, pos, endpos)

    def match(self, text: str, pos: int = 0, endpos: int = 1 << 62) -> Any:
        m = self.pattern.match(text, pos, endpos)
        self.chars += (m.end() if m else pos) - pos + 1  # what it read, and the character that stopped it
        return m


@pytest.mark.parametrize("name", ["quote_backslash", "quotes", "open_string_escapes", "long_strings"])
def test_the_deadline_stops_the_scan_inside_its_loop(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    token, rest = CountingPattern(codec._TOKEN), CountingPattern(codec._REST)
    monkeypatch.setattr(codec, "_TOKEN", token)
    monkeypatch.setattr(codec, "_REST", rest)
    data = payload(*NAMED[name], BIG)
    # A clock that passes the deadline at its second read: the scan must stop within a window or two.
    reads = iter(range(1 << 30))
    monkeypatch.setattr(codec.time, "monotonic", lambda: float(next(reads)))
    with pytest.raises(DecodeError) as err:
        decode_payload(data, deadline=0.5)
    assert err.value.code == "decode_deadline"
    assert token.chars + rest.chars <= 2 * WINDOW + 2, (token.chars, rest.chars)


def test_every_position_is_scanned_at_most_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    token, rest = CountingPattern(codec._TOKEN), CountingPattern(codec._REST)
    monkeypatch.setattr(codec, "_TOKEN", token)
    monkeypatch.setattr(codec, "_REST", rest)
    for prefix, unit in NAMED.values():
        token.chars = rest.chars = 0
        data = payload(prefix, unit, BIG)
        try:
            decode_payload(data, deadline=time.monotonic() + 600)
        except DecodeError:
            pass
        assert token.chars + rest.chars <= 2 * len(data), (prefix, unit[:20], token.chars, rest.chars)


# --- the bounds are the same as before, across the scan's windows ------------------------------------------


@pytest.mark.parametrize("windows", [1, 2])
@pytest.mark.parametrize("shift", [-3, -2, -1, 0, 1, 2])
@pytest.mark.parametrize("piece", ["x", "\\\\", '\\"', "é", "\U0001f600", "\\ud83d\\ude00", "[", "}", "\\n"])
def test_a_literal_cut_by_a_window_decodes_whole(windows: int, shift: int, piece: str) -> None:
    # The literal of pieces (JSON as written) starts a few characters before a window's edge.
    head = "[" + ('"' + "r" * (WINDOW - 3) + '",') * (windows - 1) + '"' + "p" * (WINDOW - 10 + shift) + '","'
    text = head + piece * 40 + '",{"k":["]]]"]},"' + "q" * WINDOW + '"]'
    assert decode_payload(text.encode(), deadline=time.monotonic() + 60) == json.loads(text)


@pytest.mark.parametrize(("text", "code"), [
    ('["' + "a" * MAX_STRING_BYTES + '"]', None),
    ('["' + "a" * (MAX_STRING_BYTES + 1) + '"]', "string_too_long"),
    ('["' + "\\n" * (MAX_STRING_BYTES // 2) + '"]', None),  # 64 KiB as written
    ('["' + "\\n" * (MAX_STRING_BYTES // 2) + 'a"]', "string_too_long"),
    ('["' + "é" * (MAX_STRING_BYTES // 2) + '"]', None),
    ('["' + "é" * (MAX_STRING_BYTES // 2) + 'a"]', "string_too_long"),
    ('["' + "a" * (3 * MAX_STRING_BYTES), "string_too_long"),  # open, and already over the bound
    ('["' + "a" * (MAX_STRING_BYTES - 10), "invalid_json"),  # open to the end
    ('["' + "a" * 100 + "\x01" + '"]', "invalid_json"),  # a control character
    ('["' + "a" * 100 + "\\", "invalid_json"),  # an escape cut by the end
    ("[" * 32 + '"' + "]" * 40 + '"' + "]" * 32, None),  # brackets inside a string do not nest
    ("[" * 33 + "]" * 33, "too_deep"),
    ('["' + "p" * (WINDOW - 5) + '",' + "[" * 31 + "]" * 31 + "]", None),
    ('["' + "p" * (WINDOW - 5) + '",' + "[" * 32 + "]" * 32 + "]", "too_deep"),
    ('{"a":"\\ud800"}', "invalid_utf8"),
    ('{"a":1,"\\u0061":2}', "duplicate_key"),
    ('[1e400]', "number_out_of_bounds"),
    ('"" ""', "invalid_json"),
])
def test_bounds_and_codes_across_windows(text: str, code: str | None) -> None:
    if code is None:
        assert decode_payload(text.encode(), deadline=time.monotonic() + 60) == json.loads(text)
    else:
        with pytest.raises(DecodeError) as err:
            decode_payload(text.encode(), deadline=time.monotonic() + 60)
        assert err.value.code == code


# --- through a real service ---------------------------------------------------------------------------------


def test_a_1mib_bad_frame_does_not_stop_another_connection(tmp_path: Path) -> None:
    data = tmp_path / "data"
    bad = payload(*NAMED["quote_backslash"], MAX_REQUEST_BYTES)
    assert len(bad) == MAX_REQUEST_BYTES
    with running_service(data):
        sock = paths.events_socket(data)
        answers: dict[str, Any] = {}

        def send_bad() -> None:
            answers["bad"] = exchange_raw(sock, struct.pack(">I", len(bad)) + bad, timeout=30)

        sender = threading.Thread(target=send_bad)
        sender.start()
        good = client.new_request("pre_tool_use", pre_tool_use("Bash", {"command": "ls"}), adapter="claude_code",
                                  adapter_version="t", host_version="t", deadline_ms=10_000)
        answers["good"] = exchange_raw(sock, frame(dict(good)), timeout=10)
        sender.join(40)
        assert not sender.is_alive()
    reply = check_reply(answers["good"])
    assert (reply["request_id"], reply["decision"], reply["reason"]) == (
        good["request_id"], "no_override", "no_rule_matched")
    refused = check_reply(answers["bad"])
    assert (refused["decision_source"], refused["reason"]) == ("protocol_error", "string_too_long")
