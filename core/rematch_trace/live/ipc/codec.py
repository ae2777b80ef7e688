"""Frames and bounded JSON: the transport half of IPC v2.

A frame is a 4-byte big-endian length followed by exactly that many bytes of
one UTF-8 JSON value. :func:`decode_payload` enforces every bound of the
contract *before* or *while* it builds values, and each rejection carries its
own :class:`DecodeError` code (``docs/ipc-v2.md`` lists them). Decoding is
bounded in time too: decoding is linear in the payload (one left-to-right
scan, then the ``json`` parser, then one walk), and a monotonic deadline
(100 ms by default) is checked inside each: before every window of the scan,
every 4,096 objects and numbers of the parse, every 4,096 values of the walk;
cooperatively rather than preemptively.

Standard library only (a hook process imports this on every tool call).
"""

from __future__ import annotations

import json
import math
import re
import socket
import struct
import time
from decimal import Decimal, InvalidOperation
from itertools import accumulate
from typing import Any

#: The protocol version this codec speaks.
PROTOCOL_VERSION = 2
#: Largest request payload, in bytes (the 4-byte header excluded).
MAX_REQUEST_BYTES = 1 << 20
#: Largest reply payload, in bytes.
MAX_REPLY_BYTES = 16 << 10
#: Deepest nesting of arrays and objects (the top-level value is depth 1).
MAX_DEPTH = 32
#: Longest string literal, in bytes as encoded in the frame (quotes excluded, escapes as written).
MAX_STRING_BYTES = 64 << 10
#: Most members of one object.
MAX_MEMBERS = 1024
#: Most elements of one array.
MAX_ELEMENTS = 2048
#: Default decode deadline, seconds on the monotonic clock.
DECODE_DEADLINE_S = 0.100
#: Largest integer magnitude carried exactly (IEEE 754 binary64's exact integer range).
MAX_EXACT_INT = 2**53 - 1

_HEADER = struct.Struct(">I")

#: Every rejection code, with what it means (docs/ipc-v2.md repeats this table).
ERROR_CODES: dict[str, str] = {
    "frame_truncated": "the stream ended inside a frame's header or payload",
    "frame_too_long": "the header announces more bytes than the bound (rejected before reading them)",
    "read_deadline": "the frame did not arrive whole before the read deadline",
    "decode_deadline": "decoding did not finish before its deadline",
    "invalid_utf8": "the payload is not UTF-8, or a string holds a lone surrogate",
    "invalid_json": "the payload is not exactly one JSON value (NaN and Infinity included)",
    "too_deep": "arrays and objects nest deeper than the bound",
    "string_too_long": "a string literal is longer than the bound",
    "too_many_members": "an object has more members than the bound",
    "too_many_elements": "an array has more elements than the bound",
    "duplicate_key": "an object holds the same key twice (after unescaping)",
    "number_out_of_bounds": "a number has no exact binary64 value (it would be rounded)",
    "unsupported_version": "protocol_version is not one this side speaks",
    "unexpected_field": "a field the message type does not define",
    "missing_field": "a field the message type requires is absent",
    "wrong_type": "a field has the wrong JSON type",
    "invalid_value": "a field has the right type but a value outside its domain",
    "unknown_request_kind": "no handler is registered for the request's kind on this channel",
    "duplicate_request_id": "a request id already used for a different invocation",
    "nonce_reused": "an invocation nonce already used by a request with another id",
    "busy": "the service is at its concurrency bound",
    "reply_too_long": "an encoded message exceeds its bound",
}


class DecodeError(ValueError):
    """A frame or payload that breaks the contract; ``code`` is one of :data:`ERROR_CODES`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class FrameClosed(Exception):
    """The peer closed the stream cleanly before a new frame began."""


# --- encoding -------------------------------------------------------------------------------


def encode_payload(value: Any) -> bytes:
    """The compact UTF-8 JSON of ``value`` (key order as given; same value, same bytes)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def encode_frame(value: Any, limit: int) -> bytes:
    """One frame holding ``value``; :class:`DecodeError` ``reply_too_long`` past ``limit`` bytes."""
    try:
        payload = encode_payload(value)
    except UnicodeEncodeError:
        raise DecodeError("invalid_utf8", "a string holds a lone surrogate") from None
    if len(payload) > limit:
        raise DecodeError("reply_too_long", f"{len(payload)} bytes, the bound is {limit}")
    return _HEADER.pack(len(payload)) + payload


# --- reading frames -------------------------------------------------------------------------


def _recv_exact(sock: socket.socket, n: int, deadline: float, started: bool) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        # Past the deadline, bytes that already arrived are still taken (a reader the
        # scheduler kept waiting is not the peer's fault); only waiting for more is refused.
        sock.settimeout(max(0.0, deadline - time.monotonic()))
        try:
            chunk = sock.recv(min(n - len(buf), 256 * 1024))
        except (TimeoutError, BlockingIOError):
            raise DecodeError("read_deadline", f"{len(buf)} of {n} bytes before the deadline") from None
        if not chunk:
            if not buf and not started:
                raise FrameClosed()
            raise DecodeError("frame_truncated", f"the stream ended after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def read_frame(sock: socket.socket, limit: int, deadline: float) -> bytes:
    """Read one frame's payload from ``sock`` before ``deadline`` (monotonic seconds).

    The length is checked against ``limit`` before any payload byte is read.

    :raises FrameClosed: the peer closed the stream before the frame began.
    :raises DecodeError: ``frame_truncated``, ``frame_too_long`` or ``read_deadline``.
    """
    (length,) = _HEADER.unpack(_recv_exact(sock, 4, deadline, False))
    if length > limit:
        raise DecodeError("frame_too_long", f"the header announces {length} bytes, the bound is {limit}")
    return _recv_exact(sock, length, deadline, True) if length else b""


def split_frame(data: bytes, limit: int) -> bytes:
    """The payload of a frame held whole in ``data`` (a test vector, a fuzz input).

    :raises DecodeError: ``frame_truncated`` (short, or bytes after the payload
        counted as a second, incomplete frame) or ``frame_too_long``.
    """
    if len(data) < 4:
        raise DecodeError("frame_truncated", f"{len(data)} bytes, a header needs 4")
    (length,) = _HEADER.unpack_from(data)
    if length > limit:
        raise DecodeError("frame_too_long", f"the header announces {length} bytes, the bound is {limit}")
    if len(data) - 4 < length:
        raise DecodeError("frame_truncated", f"the stream ended after {len(data) - 4} of {length} bytes")
    if len(data) - 4 > length:
        raise DecodeError("frame_truncated", "bytes after the payload begin a frame that never ends")
    return data[4:]


# --- decoding payloads ----------------------------------------------------------------------

# One token of a left-to-right scan: a string literal, or a bracket. A literal is written
# as runs of plain characters between escapes (a run is one class scan, ~20x faster than
# an alternation tried at every character; the parser rejects the escapes JSON does not
# define). A literal that does not close swallows the rest of the window, so no position
# is ever scanned twice: the scan is linear whatever the payload (issue 29: `"\` repeated
# made an unanchored search retry from every quote, quadratic, and `re` holds the GIL).
_TOKEN = re.compile(r'"[^"\\\x00-\x1f]*(?:\\.[^"\\\x00-\x1f]*)*(?:"|[\s\S]*)|[\[\]{}]', re.S)
# The rest of a literal after its opening quote, up to (not including) what stops it.
_REST = re.compile(r'[^"\\\x00-\x1f]*(?:\\.[^"\\\x00-\x1f]*)*', re.S)
_DELTA = {"[": 1, "{": 1, "]": -1, "}": -1}
#: Characters scanned between two deadline checks: ``re`` holds the GIL while it scans one
#: window, so a small one lets other connections' threads run often (~1-5 ms apart).
_WINDOW = 16 << 10
#: Values built or checked between two deadline checks while parsing and walking.
_CHECK_EVERY = 4096


def _check_deadline(deadline: float, phase: str) -> None:
    if time.monotonic() > deadline:
        raise DecodeError("decode_deadline", f"decoding passed its deadline ({phase})")


class _Parse:
    """The ``json`` decoder's hooks for one payload: every bound they see, and the deadline every few values.

    The C scanner builds the value; these hooks are its only way back into Python, so
    they are where a long parse checks its deadline (cooperatively, every
    :data:`_CHECK_EVERY` objects and numbers).
    """

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.left = _CHECK_EVERY
        self.decoder = json.JSONDecoder(
            object_pairs_hook=self.object_hook,
            parse_int=self.parse_int,
            parse_float=self.parse_float,
            parse_constant=_reject_constant,
        )

    def tick(self) -> None:
        """Count one value; check the deadline every :data:`_CHECK_EVERY`."""
        self.left -= 1
        if self.left <= 0:
            self.left = _CHECK_EVERY
            _check_deadline(self.deadline, "parsing")

    def object_hook(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        """An object's members: bounded, without duplicate keys."""
        self.tick()
        return _object_hook(pairs)

    def parse_int(self, text: str) -> int:
        """An integer, exact or refused."""
        self.tick()
        return _parse_int(text)

    def parse_float(self, text: str) -> float:
        """A decimal, exact or refused."""
        self.tick()
        return _parse_float(text)


def _object_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    if len(pairs) > MAX_MEMBERS:
        raise DecodeError("too_many_members", f"an object has {len(pairs)} members, the bound is {MAX_MEMBERS}")
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise DecodeError("duplicate_key", f"key {k[:64]!r} appears twice in one object")
            seen.add(k)
    return out


def _parse_int(text: str) -> int:
    # A long digit string is out of range whatever its value: never build it.
    if len(text) > 17 or abs(value := int(text)) > MAX_EXACT_INT:
        raise DecodeError("number_out_of_bounds", f"integer {text[:40]} is outside ±(2^53-1)")
    return value


def _parse_float(text: str) -> float:
    """A decimal accepted only when it is exactly a binary64 value's shortest spelling."""
    if len(text) > 40:
        raise DecodeError("number_out_of_bounds", f"number {text[:40]}… has more digits than any binary64")
    try:
        exact = Decimal(text)
    except InvalidOperation:  # pragma: no cover - the JSON grammar already checked it
        raise DecodeError("invalid_json", f"bad number {text[:40]}") from None
    if abs(exact.adjusted()) > 400:
        raise DecodeError("number_out_of_bounds", f"number {text[:40]} is outside binary64's range")
    value = float(text)
    if not math.isfinite(value) or Decimal(repr(value)) != exact:
        raise DecodeError("number_out_of_bounds", f"number {text[:40]} has no exact binary64 value")
    return value


def _reject_constant(name: str) -> Any:
    raise DecodeError("invalid_json", f"{name} is not JSON")


def _literal_end(text: str, start: int, deadline: float) -> int:
    """The index after the closing quote of the literal opening at ``start``.

    Scanned in windows from the quote on, the deadline checked before each (a window
    that ends inside an escape resumes at its backslash). A literal that never closes
    is ``invalid_json``; one whose content already has more characters than the bound
    has bytes (so more bytes too) is ``string_too_long`` at once, closed or not: no
    literal costs more than the bound to refuse.
    """
    q, end = start + 1, len(text)
    while True:
        _check_deadline(deadline, "scanning a string")
        stop = min(end, q + _WINDOW)
        e = _REST.match(text, q, stop).end()  # type: ignore[union-attr]  # it matches the empty string
        if e < stop and text[e] == '"':
            return e + 1
        if stop == end or not (e == stop or (e == stop - 1 and text[e] == "\\")):
            # a control character, or the payload ends inside the literal
            raise DecodeError("invalid_json", f"unterminated string starting at character {start}")
        if e - start - 1 > MAX_STRING_BYTES:
            raise DecodeError("string_too_long", f"a string of over {MAX_STRING_BYTES} characters (still open); "
                              f"the bound is {MAX_STRING_BYTES} bytes")
        q = e


def _too_long(literal: str) -> bool:
    # Characters bound bytes from below: encode only a candidate that may be too long.
    return len(literal) - 2 > MAX_STRING_BYTES // 4 and len(literal.encode("utf-8", "surrogatepass")) - 2 > MAX_STRING_BYTES


def _scan(text: str, deadline: float) -> None:
    """Depth and string-length bounds, checked on the text before any value is built.

    One left-to-right pass in windows of :data:`_WINDOW` characters, the deadline
    checked before each. Within a window one ``findall`` takes every literal and
    bracket in order, each position once. A literal still open at the window's end
    (the pattern lets an open literal swallow the rest of the window, so only the
    last token can be) is followed to its close by :func:`_literal_end`, and the
    next window starts after it: no position is scanned more than twice, and a
    literal that never closes is ``invalid_json`` as soon as that is known.
    """
    pos, end, depth = 0, len(text), 0
    while pos < end:
        _check_deadline(deadline, "scanning")
        stop = min(end, pos + _WINDOW)
        tokens = _TOKEN.findall(text, pos, stop)
        nxt = stop
        if tokens and tokens[-1][0] == '"' and text.endswith(tokens[-1], pos, stop):
            start = stop - len(tokens[-1])
            nxt = _literal_end(text, start, deadline)
            if nxt != stop:  # it was open: it is checked here, whole, and the scan resumes after it
                tokens.pop()
                if _too_long(text[start:nxt]):
                    raise DecodeError("string_too_long", f"a string of {nxt - start - 2} characters; "
                                      f"the bound is {MAX_STRING_BYTES} bytes")
        if tokens:
            if len(max(tokens, key=len)) - 2 > MAX_STRING_BYTES // 4:
                for s in tokens:
                    if _too_long(s):
                        raise DecodeError("string_too_long", f"a string of {len(s) - 2} characters; "
                                          f"the bound is {MAX_STRING_BYTES} bytes")
            brackets = "".join(filter("[]{}".__contains__, tokens))
            if brackets:
                deltas = list(map(_DELTA.__getitem__, brackets))
                deepest = max(accumulate(deltas, initial=depth))
                if deepest > MAX_DEPTH:
                    raise DecodeError("too_deep", f"nesting depth {deepest}, the bound is {MAX_DEPTH}")
                depth += sum(deltas)
        pos = nxt


def _walk(value: Any, deadline: float) -> None:
    """Array lengths and string validity, checked on the built value."""
    stack = [value]
    steps = 0
    while stack:
        v = stack.pop()
        steps += 1
        if steps % _CHECK_EVERY == 0:
            _check_deadline(deadline, "checking values")
        t = type(v)
        if t is str:
            if not v.isascii():
                _valid_text(v)
        elif t is list:
            if len(v) > MAX_ELEMENTS:
                raise DecodeError("too_many_elements", f"an array has {len(v)} elements, the bound is {MAX_ELEMENTS}")
            stack.extend(v)
        elif t is dict:
            for k, x in v.items():
                if not k.isascii():
                    _valid_text(k)
                stack.append(x)


def _valid_text(s: str) -> None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise DecodeError("invalid_utf8", "a string holds a lone surrogate escape") from None


def decode_payload(payload: bytes, deadline: float | None = None) -> Any:
    """One JSON value from a frame's payload, every bound checked.

    :param deadline: monotonic seconds by which decoding must end; 100 ms from now by default.
    :raises DecodeError: with the code of the first bound broken.
    """
    if deadline is None:
        deadline = time.monotonic() + DECODE_DEADLINE_S
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DecodeError("invalid_utf8", f"byte {err.start} is not UTF-8") from None
    _scan(text, deadline)
    try:
        value = _Parse(deadline).decoder.decode(text)
    except DecodeError:
        raise
    except json.JSONDecodeError as err:
        raise DecodeError("invalid_json", f"{err.msg} at character {err.pos}") from None
    except RecursionError:  # unreachable past the depth scan; kept as a bound of last resort
        raise DecodeError("too_deep", "nesting too deep to decode") from None
    _check_deadline(deadline, "parsing")
    _walk(value, deadline)
    return value


def decode_frame(data: bytes, limit: int, deadline: float | None = None) -> Any:
    """The JSON value of one whole frame held in ``data``."""
    return decode_payload(split_frame(data, limit), deadline)


__all__ = [
    "DECODE_DEADLINE_S",
    "ERROR_CODES",
    "MAX_DEPTH",
    "MAX_ELEMENTS",
    "MAX_EXACT_INT",
    "MAX_MEMBERS",
    "MAX_REPLY_BYTES",
    "MAX_REQUEST_BYTES",
    "MAX_STRING_BYTES",
    "PROTOCOL_VERSION",
    "DecodeError",
    "FrameClosed",
    "decode_frame",
    "decode_payload",
    "encode_frame",
    "encode_payload",
    "read_frame",
    "split_frame",
]
