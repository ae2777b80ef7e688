"""Issue 28: the fast hook client decodes replies as strictly as the service's codec and ``check_reply``.

``rematch_hook.py`` may import no rematch code (it runs with ``python -S -I``), so it checks
replies with built-in modules; these tests feed the same bytes to its check and to the
codec + ``check_reply`` and require the same accept/reject, on a table and on Hypothesis
inputs. Then the real hook, as Claude Code runs it, against a service that answers with
replies that break the contract: none is acted on (a deny is not printed), each is one
line in the error log, and the event is still captured.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from capture_helpers import HOOK_ARGV, hook_env, run_hook
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rematch_trace.live.ipc.codec import MAX_REPLY_BYTES, DecodeError, decode_payload, encode_payload
from rematch_trace.live.ipc.messages import DECISION_SOURCES, TOOL_CLASSES, check_reply, make_reply
from rematch_trace.testing import hold_service_lock


def load_hook() -> ModuleType:
    """The hook client's module, loaded from the file the installed command runs."""
    path = next(Path(a) for a in HOOK_ARGV if a.endswith("rematch_hook.py"))
    spec = importlib.util.spec_from_file_location("rematch_hook_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOK = load_hook()


def service_accepts(payload: bytes) -> bool:
    """What the service's side accepts: a reply frame's bound, the codec, then ``check_reply``."""
    if len(payload) > MAX_REPLY_BYTES:
        return False
    try:
        check_reply(decode_payload(payload, deadline=time.monotonic() + 30))
    except DecodeError:
        return False
    return True


def hook_accepts(payload: bytes) -> bool:
    """What the hook client accepts (any other exception than its own failure fails the test)."""
    try:
        HOOK.decode_reply(payload)
    except HOOK._Failed:
        return False
    return True


def decodes_alike(payload: bytes) -> bool:
    """The hook's decoder and the codec agree on ``payload`` as a JSON value (reply fields aside)."""
    try:
        decode_payload(payload, deadline=time.monotonic() + 30)
        codec_ok = len(payload) <= MAX_REPLY_BYTES
    except DecodeError:
        codec_ok = False
    try:
        HOOK._decode(payload)
        hook_ok = True
    except HOOK._BadReply:
        hook_ok = False
    return codec_ok == hook_ok


GOOD = make_reply("req-1", "deny", "policy:credential-to-network", "A credential reaches the network.",
                  source="local_rules", tool_class="shell_exec", incident_id="inc-0123456789abcdef0123")


def reply_bytes(**changes: Any) -> bytes:
    """GOOD with ``changes`` (``...`` removes a field), compact JSON."""
    r: dict[str, Any] = dict(GOOD)
    for k, v in changes.items():
        if v is ...:
            r.pop(k)
        else:
            r[k] = v
    return json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode()


def with_member(raw: bytes, member: bytes) -> bytes:
    """``raw`` (an object) with ``member`` spliced in before its closing brace."""
    return raw[:-1] + b"," + member + b"}"


TABLE: list[tuple[str, bytes, bool]] = [
    ("the golden deny", reply_bytes(), True),
    ("surrounding JSON whitespace", b" \n\t" + reply_bytes() + b"\r\n ", True),
    ("a duplicate decision", with_member(reply_bytes(decision="no_override"), b'"decision":"deny"'), False),
    ("a duplicate key spelled with an escape", with_member(reply_bytes(), b'"\\u0064ecision":"deny"'), False),
    ("protocol_version 3", reply_bytes(protocol_version=3), False),
    ("protocol_version 1", reply_bytes(protocol_version=1), False),
    ("protocol_version 2.0", reply_bytes().replace(b'"protocol_version":2', b'"protocol_version":2.0'), False),
    ("protocol_version true", reply_bytes(protocol_version=True), False),
    ("an extra field", reply_bytes(extra=1), False),
    ("an extra field, a v3 reply", reply_bytes(protocol_version=3, hold_ms=100), False),
    ("no incident_id", reply_bytes(incident_id=...), False),
    ("a null request id outside a protocol error", reply_bytes(request_id=None), False),
    ("a null request id in a protocol error", reply_bytes(request_id=None, decision_source="protocol_error"), True),
    ("an unknown decision", reply_bytes(decision="allow"), False),
    ("an unknown source", reply_bytes(decision_source="model"), False),
    ("an unknown tool class", reply_bytes(tool_class="shell"), False),
    ("execution observed", reply_bytes(execution_observed="yes"), False),
    ("an upper-case reason", reply_bytes(reason="Policy:x"), False),
    ("a 64-character reason", reply_bytes(reason="r" * 64), True),
    ("a 65-character reason", reply_bytes(reason="r" * 65), False),
    ("a 128-character request id", reply_bytes(request_id="R" * 128), True),
    ("a 129-character request id", reply_bytes(request_id="R" * 129), False),
    ("a non-ASCII request id", reply_bytes(request_id="rÉq"), False),
    ("a request id with a newline", reply_bytes(request_id="req\n"), False),
    ("a 1,024-character explanation", reply_bytes(explanation="é" * 1024), True),
    ("a 1,025-character explanation", reply_bytes(explanation="e" * 1025), False),
    ("a lone surrogate", reply_bytes().replace(b"A credential", b"\\ud800 credential"), False),
    ("a surrogate pair", reply_bytes().replace(b"A credential", b"\\ud83d\\ude00 credential"), True),
    ("invalid UTF-8", reply_bytes().replace(b"A credential", b"\xff credential"), False),
    ("NaN", with_member(reply_bytes(), b'"x":NaN'), False),
    ("a second value", reply_bytes() + b"{}", False),
    ("an array", b"[" + reply_bytes() + b"]", False),
    ("not JSON", b"deny", False),
    ("empty", b"", False),
    ("over 16 KiB", reply_bytes(explanation="e" * 1000) + b" " * MAX_REPLY_BYTES, False),
]


@pytest.mark.parametrize(("name", "payload", "accepted"), TABLE, ids=[t[0] for t in TABLE])
def test_the_hook_accepts_exactly_what_the_service_codec_accepts(name: str, payload: bytes, accepted: bool) -> None:
    assert service_accepts(payload) is accepted
    assert hook_accepts(payload) is accepted


NUMBERS = ["0", "-0", "2", "-0.0", "0.1", "0.10000000000000001", "1e400", "1E+2", "5e-324", "2e-324", "1e-400",
           "0e-500", "0.000e5", "9007199254740991", "9007199254740992", "-9007199254740991", "100000000000000000",
           "1.0", "1.5e308", "1.8e308", "123456789012345678901234567890123456789", "1e22", "1e23", "0.3",
           "0.30000000000000004", "2.5E-3"]
STRINGS = ['"a"', '"\\ud800"', '"\\udc00x"', '"\\ud83d\\ude00"', '"\\u0061"', '"é"', '"\\n"', '"\\x"', '"\t"', '""']
scalars = st.sampled_from(NUMBERS + STRINGS + ["true", "false", "null", "NaN", "-Infinity"])


def arrays(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(inner, max_size=4).map(lambda xs: "[" + ",".join(xs) + "]")


def objects(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    keys = st.sampled_from(['"a"', '"b"', '"\\u0061"', '"\\ud800"'])
    return st.lists(st.tuples(keys, inner), max_size=4).map(
        lambda kv: "{" + ",".join(f"{k}:{v}" for k, v in kv) + "}")


json_texts = st.recursive(scalars, lambda inner: arrays(inner) | objects(inner), max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(json_texts, st.sampled_from(["", " ", "\n", "\x0b", "\xa0", "x"]))
@example("[" * 32 + "]" * 32, "")
@example("[" * 33 + "]" * 33, "")
@example("[" * 2000 + "]" * 2000, "")
@example("[" + ",".join(["0"] * 2048) + "]", "")
@example("[" + ",".join(["0"] * 2049) + "]", "")
@example("{" + ",".join(f'"k{i}":0' for i in range(1025)) + "}", "")
def test_the_hooks_decoder_has_the_codecs_rules(text: str, pad: str) -> None:
    assert decodes_alike((pad + text + pad).encode("utf-8", "surrogatepass"))


ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,130}", fullmatch=True)
reasons = st.from_regex(r"[a-zA-Z0-9][a-z0-9_.:-]{0,66}", fullmatch=True)
values = st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=8) | st.sampled_from([[], {}, 2.0])


@st.composite
def replies(draw: st.DrawFn) -> bytes:
    """A reply near the contract's edges: valid fields, then a few mutations of its fields and bytes."""
    source = draw(st.sampled_from([*DECISION_SOURCES, "model"]))
    reply: dict[str, Any] = dict(make_reply(
        draw(st.none() | ids), draw(st.sampled_from(["no_override", "deny", "allow"])), draw(reasons),
        draw(st.text(max_size=1030).filter(lambda t: len(t) < 1000) | st.just("e" * 1024) | st.just("e" * 1025)),
        source=source, tool_class=draw(st.sampled_from([*TOOL_CLASSES, "x"])),
        incident_id=draw(st.none() | ids)))
    for _ in range(draw(st.integers(0, 2))):
        field = draw(st.sampled_from([*reply, "extra"]))
        action = draw(st.sampled_from(["drop", "set", "version"]))
        if action == "drop":
            reply.pop(field, None)
        elif action == "set":
            reply[field] = draw(values)
        else:
            reply["protocol_version"] = draw(st.sampled_from([1, 2, 3, True, "2"]))
    raw = encode_payload(reply) if draw(st.booleans()) else json.dumps(reply).encode("utf-8", "surrogatepass")
    if reply and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(reply)))
        raw = with_member(raw, json.dumps(key).encode() + b":" + json.dumps(reply[key]).encode())
    return raw


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replies())
def test_hook_and_service_agree_on_every_reply(payload: bytes) -> None:
    assert hook_accepts(payload) is service_accepts(payload)


# --- the real hook against a service answering out of contract -----------------------------------------------


class FakeService:
    """A socket where the hook looks for the service, answering every request with ``answer(request_id)``."""

    def __init__(self, path: Path, answer: Any) -> None:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)
        self.lock = hold_service_lock(path.parent)  # a service out of contract, not an impostor: it holds the lock
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(os.fspath(path))
        self.sock.listen(4)
        self.answer = answer
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(10)
                head = conn.recv(4, socket.MSG_WAITALL)
                body = conn.recv(struct.unpack(">I", head)[0], socket.MSG_WAITALL)
                payload = self.answer(json.loads(body)["request_id"])
                conn.sendall(struct.pack(">I", len(payload)) + payload)

    def close(self) -> None:
        self.sock.close()
        os.close(self.lock)


def deny_for(rid: str, **changes: Any) -> bytes:
    """The golden deny for request ``rid``, changed."""
    return reply_bytes(request_id=rid, **changes)


@pytest.mark.parametrize(("case", "answer", "code"), [
    ("valid deny", lambda rid: deny_for(rid), None),
    ("duplicate key", lambda rid: with_member(deny_for(rid, decision="no_override"), b'"decision":"deny"'),
     "duplicate_key"),
    ("another protocol_version", lambda rid: deny_for(rid, protocol_version=3), "unsupported_version"),
    ("an extra field", lambda rid: deny_for(rid, hold=True), "unexpected_field"),
    ("an inexact number", lambda rid: with_member(deny_for(rid), b'"x":0.10000000000000001'), "number_out_of_bounds"),
])
def test_the_hook_never_acts_on_a_reply_that_breaks_the_codec(tmp_path: Path, case: str, answer: Any,
                                                              code: str | None) -> None:
    data = tmp_path / "d"
    env = hook_env(tmp_path / "home", data, service=True)
    where = subprocess.run([*HOOK_ARGV, "--where"], env=env, capture_output=True, text=True, timeout=60)
    service = FakeService(Path(where.stdout.splitlines()[1]), answer)
    try:
        payload = {"session_id": "s-reply", "cwd": str(tmp_path), "hook_event_name": "PreToolUse",
                   "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1",
                   "transcript_path": str(tmp_path / "t.jsonl")}
        res = run_hook(payload, env)
    finally:
        service.close()
    assert (res.returncode, res.stderr) == (0, b"")
    log = data / "live" / "errors.log"
    if code is None:
        assert json.loads(res.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert not log.exists()
    else:
        assert res.stdout == b""  # fail open: nothing printed, the call is not denied on a broken reply
        lines = log.read_text().splitlines()
        assert len(lines) == 1 and f"bad_reply: {code}" in lines[0], lines


#: The table of replies the Python clients and the pi/omp extension must judge alike (tests/harness/ts/
#: extension.test.ts reads it too): each accepted or refused as a reply to request ``abc``.
REPLY_CASES = Path(__file__).resolve().parents[1] / "harness" / "ts" / "reply_cases.json"


def _case_bytes(case: dict[str, Any]) -> bytes:
    return bytes.fromhex(case["body_hex"]) if "body_hex" in case else case["body"].encode("utf-8", "surrogatepass")


@pytest.mark.parametrize("case", json.loads(REPLY_CASES.read_text("utf-8")), ids=lambda c: c["name"])
def test_the_shared_reply_table(case: dict[str, Any]) -> None:
    """Both Python clients accept exactly the table's replies to request ``abc`` (a ``protocol_error`` may name
    none): duplicate keys, another request's id, extra or missing fields are refused."""
    payload = _case_bytes(case)

    def for_this_request(reply: dict[str, Any]) -> bool:
        return reply["decision_source"] == "protocol_error" or reply["request_id"] == "abc"

    try:
        codec = for_this_request(dict(check_reply(decode_payload(payload))))
    except DecodeError:
        codec = False
    try:
        hook = for_this_request(HOOK.decode_reply(payload))
    except HOOK._Failed:
        hook = False
    assert (codec, hook) == (case["accept"], case["accept"]), case["name"]
