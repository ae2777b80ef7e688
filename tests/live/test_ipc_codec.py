"""IPC v2 codec: golden frames (valid, and one per rejection), the round-trip property, hostile bytes."""

from __future__ import annotations

import json
import struct
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rematch_trace.live.ipc.codec import (
    ERROR_CODES,
    MAX_EXACT_INT,
    MAX_REPLY_BYTES,
    MAX_REQUEST_BYTES,
    DecodeError,
    decode_frame,
    decode_payload,
    encode_frame,
)
from rematch_trace.live.ipc.messages import check_reply, check_request, make_reply

REQUEST: dict[str, Any] = {
    "protocol_version": 2,
    "request_id": "req-0001",
    "request_kind": "pre_tool_use",
    "adapter": "claude_code",
    "adapter_version": "0.1.0",
    "received_at_ms": 1790000000000,
    "hard_deadline_ms": 1790000001500,
    "host_version": "2.1.200",
    "invocation_nonce": "9f86d081884c7d659a2feaa0c55ad015",
    "host_payload": {"tool_name": "Bash", "tool_input": {"command": "ls -la"}},
}
#: The exact bytes of REQUEST as a frame: the header is 0x00000153 (339 bytes).
REQUEST_FRAME = (
    b'\x00\x00\x01S{"protocol_version":2,"request_id":"req-0001","request_kind":"pre_tool_use",'
    b'"adapter":"claude_code","adapter_version":"0.1.0","received_at_ms":1790000000000,'
    b'"hard_deadline_ms":1790000001500,"host_version":"2.1.200",'
    b'"invocation_nonce":"9f86d081884c7d659a2feaa0c55ad015",'
    b'"host_payload":{"tool_name":"Bash","tool_input":{"command":"ls -la"}}}'
)
REPLY_FRAME = (
    b'\x00\x00\x01\x1c{"protocol_version":2,"request_id":"req-0001","decision":"deny",'
    b'"reason":"policy:credential-to-network","explanation":"A credential reaches the network.",'
    b'"incident_id":"inc-0123456789abcdef0123","decision_source":"local_rules","tool_class":"shell_exec",'
    b'"execution_observed":"unknown"}'
)


def raw(payload: bytes) -> bytes:
    """A frame around arbitrary payload bytes."""
    return struct.pack(">I", len(payload)) + payload


def req(**changes: Any) -> bytes:
    """The golden request with ``changes`` (a value of ``...`` removes the field), as a frame."""
    r = dict(REQUEST)
    for k, v in changes.items():
        if v is ...:
            r.pop(k)
        else:
            r[k] = v
    return raw(json.dumps(r, ensure_ascii=False).encode())


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


#: One invalid frame per rejection code the codec and the request check produce.
INVALID: list[tuple[str, bytes]] = [
    ("frame_truncated", b"\x00\x00"),
    ("frame_truncated", REQUEST_FRAME[:-1]),
    ("frame_too_long", struct.pack(">I", MAX_REQUEST_BYTES + 1) + b"{"),
    ("invalid_utf8", raw(b'{"request_id":"\xff"}')),
    ("invalid_utf8", raw(b'{"x":"\\ud800"}')),
    ("invalid_json", raw(b'{"protocol_version":2,')),
    ("invalid_json", raw(b'{"a":NaN}')),
    ("invalid_json", raw(b'{} {}')),
    ("too_deep", req(host_payload={"x": json.loads(nested(32))})),
    ("string_too_long", req(host_payload={"x": "a" * (64 * 1024 + 1)})),
    ("too_many_members", req(host_payload={f"k{i}": i for i in range(1025)})),
    ("too_many_elements", req(host_payload={"x": list(range(2049))})),
    ("duplicate_key", raw(REQUEST_FRAME[4:-1] + b',"request_id":"req-0002"}')),
    ("duplicate_key", raw(b'{"a":1,"\\u0061":2}')),
    ("number_out_of_bounds", req(host_payload={"x": MAX_EXACT_INT + 1})),
    ("number_out_of_bounds", raw(REQUEST_FRAME[4:-1] + b',"host_x":0.1000000000000000055511151231257827}')),
    ("number_out_of_bounds", raw(b'{"x":1e400}')),
    ("unsupported_version", req(protocol_version=3, extra_v3_field=1)),
    ("unexpected_field", req(tool_name="Bash")),
    ("missing_field", req(invocation_nonce=...)),
    ("wrong_type", req(received_at_ms="1790000000000")),
    ("wrong_type", req(protocol_version=True)),
    ("wrong_type", raw(b"[]")),
    ("invalid_value", req(invocation_nonce="00")),
    ("invalid_value", req(hard_deadline_ms=1790000000000)),
    ("invalid_value", req(request_id="")),
]


def decode_request(frame: bytes) -> Any:
    return check_request(decode_frame(frame, MAX_REQUEST_BYTES))


def test_golden_request_encodes_to_its_bytes_and_back() -> None:
    assert encode_frame(REQUEST, MAX_REQUEST_BYTES) == REQUEST_FRAME
    assert decode_request(REQUEST_FRAME) == REQUEST


def test_golden_reply_encodes_to_its_bytes_and_back() -> None:
    reply = make_reply("req-0001", "deny", "policy:credential-to-network", "A credential reaches the network.",
                       source="local_rules", tool_class="shell_exec", incident_id="inc-0123456789abcdef0123")
    assert encode_frame(reply, MAX_REPLY_BYTES) == REPLY_FRAME
    assert check_reply(decode_frame(REPLY_FRAME, MAX_REPLY_BYTES)) == reply


@pytest.mark.parametrize(("code", "frame"), INVALID, ids=[f"{c}-{i}" for i, (c, _) in enumerate(INVALID)])
def test_golden_invalid_frame_is_rejected_with_its_code(code: str, frame: bytes) -> None:
    with pytest.raises(DecodeError) as err:
        decode_request(frame)
    assert err.value.code == code, err.value
    assert code in ERROR_CODES


def test_every_codec_and_message_code_has_a_golden_vector() -> None:
    transport = {"read_deadline", "decode_deadline", "unknown_request_kind", "duplicate_request_id", "nonce_reused",
                 "busy", "reply_too_long"}  # each tested where it arises: a socket, a clock, the service
    assert set(ERROR_CODES) - transport == {c for c, _ in INVALID}


def test_depth_32_is_accepted_and_33_is_not() -> None:
    # The request object is depth 1 and host_payload depth 2: 30 more arrays reach 32.
    assert decode_request(req(host_payload={"x": json.loads(nested(30))}))
    with pytest.raises(DecodeError, match="too_deep"):
        decode_request(req(host_payload={"x": json.loads(nested(31))}))


def test_bounds_are_inclusive() -> None:
    ok = req(host_payload={"s": "é" * (32 * 1024), "m": {f"k{i}": 0 for i in range(1024)}, "a": [0] * 2048,
                           "n": [MAX_EXACT_INT, -MAX_EXACT_INT, 0.1, 1e300, -0.0]})
    assert decode_request(ok)["host_payload"]["n"][2] == 0.1


def test_over_long_frame_is_rejected_from_its_header_alone() -> None:
    with pytest.raises(DecodeError, match="frame_too_long"):
        decode_frame(struct.pack(">I", MAX_REPLY_BYTES + 1), MAX_REPLY_BYTES)


def test_decode_deadline_is_checked() -> None:
    with pytest.raises(DecodeError) as err:
        decode_payload(REQUEST_FRAME[4:], deadline=time.monotonic() - 1)
    assert err.value.code == "decode_deadline"


def test_reply_encoding_is_bounded() -> None:
    big = make_reply("r", "no_override", "x", "e", source="service")
    big["explanation"] = "x" * (17 * 1024)
    with pytest.raises(DecodeError, match="reply_too_long"):
        encode_frame(big, MAX_REPLY_BYTES)
    assert len(make_reply("r", "deny", "x", "é" * 5000, source="service")["explanation"]) == 1024


def test_null_request_id_only_in_a_protocol_error_reply() -> None:
    check_reply(make_reply(None, "no_override", "invalid_json", "bad", source="protocol_error"))
    with pytest.raises(DecodeError, match="invalid_value"):
        check_reply(make_reply(None, "deny", "x", "bad", source="local_rules"))
    with pytest.raises(DecodeError, match="invalid_value"):
        check_reply({**make_reply("r", "deny", "x", "y", source="local_rules"), "decision": "allow"})
    with pytest.raises(DecodeError, match="invalid_value"):
        check_reply({**make_reply("r", "deny", "x", "y", source="local_rules"), "execution_observed": "yes"})


# --- property: encode then decode is the identity on valid messages ---------------------------------

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-MAX_EXACT_INT, MAX_EXACT_INT),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=40),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=12), inner, max_size=6),
    max_leaves=40,
)
ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}", fullmatch=True)


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    received = draw(st.integers(0, MAX_EXACT_INT - 600_000))
    return {
        "protocol_version": 2,
        "request_id": draw(ids),
        "request_kind": draw(st.from_regex(r"[a-z][a-z0-9_]{0,63}", fullmatch=True)),
        "adapter": draw(st.from_regex(r"[a-z][a-z0-9_.-]{0,63}", fullmatch=True)),
        "adapter_version": draw(st.from_regex(r"[\x21-\x7e][\x20-\x7e]{0,63}", fullmatch=True)),
        "received_at_ms": received,
        "hard_deadline_ms": received + draw(st.integers(1, 600_000)),
        "host_version": draw(st.from_regex(r"[\x21-\x7e][\x20-\x7e]{0,63}", fullmatch=True)),
        "invocation_nonce": draw(st.binary(min_size=16, max_size=16)).hex(),
        "host_payload": draw(st.dictionaries(st.text(max_size=12), json_values, max_size=8)),
    }


@st.composite
def replies(draw: st.DrawFn) -> dict[str, Any]:
    from rematch_trace.live.ipc.messages import DECISION_SOURCES, TOOL_CLASSES

    source = draw(st.sampled_from(DECISION_SOURCES))
    rid = draw(st.none() | ids) if source == "protocol_error" else draw(ids)
    return make_reply(
        rid, draw(st.sampled_from(["no_override", "deny"])),
        draw(st.from_regex(r"[a-z0-9][a-z0-9_.:-]{0,63}", fullmatch=True)), draw(st.text(max_size=300)),
        source=source, tool_class=draw(st.sampled_from(TOOL_CLASSES)),
        incident_id=draw(st.none() | st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}", fullmatch=True)),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_request_round_trip_is_identity(message: dict[str, Any]) -> None:
    frame = encode_frame(message, MAX_REQUEST_BYTES)
    back = check_request(decode_frame(frame, MAX_REQUEST_BYTES, deadline=time.monotonic() + 5))
    assert back == message
    assert encode_frame(back, MAX_REQUEST_BYTES) == frame


@settings(max_examples=300, deadline=None)
@given(replies())
def test_reply_round_trip_is_identity(message: dict[str, Any]) -> None:
    frame = encode_frame(message, MAX_REPLY_BYTES)
    assert check_reply(decode_frame(frame, MAX_REPLY_BYTES, deadline=time.monotonic() + 5)) == message


# --- hostile bytes: only DecodeError ever escapes -----------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=600))
def test_arbitrary_bytes_raise_only_decode_errors(data: bytes) -> None:
    for framed in (data, raw(data)):
        try:
            check_request(decode_frame(framed, MAX_REQUEST_BYTES, deadline=time.monotonic() + 5))
        except DecodeError as err:
            assert err.code in ERROR_CODES


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_golden_request_raises_only_decode_errors(data: st.DataObject) -> None:
    frame = bytearray(REQUEST_FRAME)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(frame) - 1))
        frame[i] = data.draw(st.integers(0, 255))
    try:
        check_request(decode_frame(bytes(frame), MAX_REQUEST_BYTES, deadline=time.monotonic() + 5))
    except DecodeError as err:
        assert err.code in ERROR_CODES
