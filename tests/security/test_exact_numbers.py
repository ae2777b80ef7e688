"""Exact numbers: distinct numeric literals never share an args_hash or an action fingerprint."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import rfc8785
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rematch_trace.host.exactnum import ExactNumber, exact_text, json_default, may_be_inexact
from rematch_trace.importing.reader import BIG_LINE, read_jsonl
from rematch_trace.security.fingerprint import action_fingerprint
from rematch_trace.store.states import state_dumps, state_loads
from rematch_trace.trace.canonical import args_hash, canonical_json
from rematch_trace.trace.truncate import truncate_input


def _read(line: bytes) -> Any:
    [rec] = list(read_jsonl(io.BufferedReader(io.BytesIO(line + b"\n")), "t.jsonl"))
    return rec.value  # type: ignore[union-attr]


def _bound(literal: str) -> tuple[str, str]:
    """args_hash and fingerprint of a tool input ``{"n": <literal>}`` read as a transcript line."""
    value = _read(b'{"input":{"n":' + literal.encode() + b"}}")["input"]
    return args_hash(value), action_fingerprint("claude_code", "s", None, "c1", "Bash", "/w", value)


def test_the_issues_pairs_no_longer_collide() -> None:
    for a, b in [("0.1", "0.10000000000000001"), ("18446744073709551616", "18446744073709551617"),
                 ("123456789012345678901234567890", "123456789012345678901234567891"),
                 ("9007199254740992", "9007199254740993"), ("1e400", "1e401"), ("4.9e-324", "5e-324")]:
        ha, fa = _bound(a)
        hb, fb = _bound(b)
        assert ha != hb and fa != fb, (a, b)


def test_inexact_numbers_are_hashed_over_their_exact_value() -> None:
    value = _read(b'{"n":123456789012345678901234567890,"m":9007199254740993,"f":0.10000000000000001}')
    assert value["n"] == ExactNumber("1.2345678901234567890123456789e+29")
    assert value["m"] == 9007199254740993 and value["f"] == ExactNumber("0.10000000000000001")
    assert canonical_json(value) == b'{"f":0.10000000000000001,"m":9007199254740993,"n":1.2345678901234567890123456789e+29}'


def test_equal_values_keep_their_canonical_form() -> None:
    # Same decimal value, same canonical JSON (RFC 8785 for what a double holds).
    assert _bound("1") == _bound("1.0") == _bound("1e0") == _bound("10E-1")
    assert _bound("0.1") == _bound("0.1000000000000000000")
    assert _bound("18446744073709551616") == _bound("1.8446744073709551616e19")


def test_only_lines_with_risky_tokens_are_parsed_twice() -> None:
    assert not may_be_inexact(b'{"version":"2.1.39","t":"2026-02-10T21:00:01.123Z","n":0.25,"k":1700000000000}')
    assert not may_be_inexact(b'{"a":[1.5e99,123456789012345,-0.000001,1234567890123456789,1.5e-300]}')
    assert not may_be_inexact(b'{"cost":0.013875000000000002,"s":"id 12345678901234567890 x"}')  # exact, or text
    assert may_be_inexact(b'{"a":[1, 1e-400]}') and may_be_inexact(b'{"a":18446744073709551616}')
    assert may_be_inexact(b'{"a": 0.10000000000000001}') and may_be_inexact(b"123456789012345678901")


_digits = st.text("0123456789", min_size=1, max_size=24)
literals = st.builds(
    lambda sign, whole, frac, exp: sign + (whole.lstrip("0") or "0") + (f".{frac}" if frac else "") + exp,
    st.sampled_from(["", "-"]),
    _digits,
    st.none() | _digits,
    st.sampled_from(["", "e5", "E-7", "e+21", "e-300", "e308", "e-330", "e400"]),
)


def _near(f: float) -> st.SearchStrategy[str]:
    """Literals that round to the same double as ``f`` (the collisions orjson made)."""
    text = repr(f)
    mant, _, exp = text.partition("e")
    mant = mant if "." in mant else mant + ".0"
    return st.sampled_from([text, f"{mant}00000000000000001" + (f"e{exp}" if exp else ""),
                            f"{mant}99999999" + (f"e{exp}" if exp else "")])


@given(st.one_of(st.tuples(literals, literals),
                 st.floats(allow_nan=False, allow_infinity=False).flatmap(lambda f: st.tuples(_near(f), _near(f)))))
@settings(max_examples=400, deadline=None)
def test_distinct_literals_never_collide(pair: tuple[str, str]) -> None:
    a, b = pair
    ha, fa = _bound(a)
    hb, fb = _bound(b)
    if Decimal(a) == Decimal(b):
        assert (ha, fa) == (hb, fb)
    else:
        assert ha != hb and fa != fb


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_exact_text_of_a_double_is_rfc8785(f: float) -> None:
    assert exact_text(repr(f)).encode() == rfc8785.dumps(f)


@given(literals)
def test_exact_text_has_the_literals_value(literal: str) -> None:
    assume(len(literal) < 200)
    assert Decimal(exact_text(literal)) == Decimal(literal)


def test_long_lines_are_exact_too() -> None:
    pad = "x" * (BIG_LINE + 10)
    value = _read(b'{"pad":"' + pad.encode() + b'","n":0.10000000000000001,"m":0.5,"k":18446744073709551617}')
    assert value["n"] == ExactNumber("0.10000000000000001") and value["m"] == 0.5
    assert value["k"] == ExactNumber("18446744073709551617")


def test_shown_input_and_saved_state_keep_the_exact_number() -> None:
    value = _read(b'{"n":0.10000000000000001,"big":1e400,"nan":NaN}')
    shown = truncate_input(value)
    assert orjson.dumps(shown, default=json_default) == b'{"n":0.10000000000000001,"big":null,"nan":null}'
    assert state_loads(state_dumps({"calls": {"c": ["Bash", shown, "h"]}})) == {"calls": {"c": ["Bash", {
        "n": ExactNumber("0.10000000000000001"), "big": None, "nan": None}, "h"]}}


# -- the real process, real formats --------------------------------------------------------

NUMBERS = ["0.1", "0.10000000000000001", "18446744073709551616", "18446744073709551617",
           "123456789012345678901234567890", "9007199254740993"]


def _claude_code(tmp: Path) -> Path:
    sid = "11111111-2222-3333-4444-555555555555"
    lines = [json.dumps({"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/w", "sessionId": sid,
                         "version": "2.1.39", "type": "user", "uuid": "u0", "timestamp": "2026-02-10T21:00:00.000Z",
                         "message": {"role": "user", "content": "sleep a bit"}})]
    for i, n in enumerate(NUMBERS):
        head = json.dumps({"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/w",
                           "sessionId": sid, "version": "2.1.39", "type": "assistant", "uuid": f"a{i}",
                           "timestamp": f"2026-02-10T21:00:{i + 1:02d}.000Z", "requestId": f"r{i}"})
        msg = ('{"id":"m' + str(i) + '","type":"message","role":"assistant","model":"claude-sonnet-4-5",'
               '"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1},"content":[{"type":"tool_use",'
               '"id":"c' + str(i) + '","name":"Bash","input":{"command":"sleep 1","timeout":' + n + "}}]}")
        lines.append(head[:-1] + ',"message":' + msg + "}")
        lines.append(json.dumps({"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/w",
                                 "sessionId": sid, "version": "2.1.39", "type": "user", "uuid": f"r{i}",
                                 "timestamp": f"2026-02-10T21:00:{i + 1:02d}.500Z", "message": {"role": "user",
                                 "content": [{"type": "tool_result", "tool_use_id": f"c{i}", "content": "ok"}]}}))
    path = tmp / "in" / "projects" / "-w" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def _codex(tmp: Path) -> Path:
    sid = "019a0000-0000-7000-8000-000000000001"
    t = [1_767_225_600_000]

    def env(kind: str, payload: Any) -> str:
        t[0] += 10
        ts = dt.datetime.fromtimestamp(t[0] / 1000, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        return json.dumps({"timestamp": ts, "type": kind, "payload": payload}, separators=(",", ":"))

    lines = [env("session_meta", {"id": sid, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w",
                                  "originator": "codex_cli_rs", "cli_version": "0.66.0"}),
             env("turn_context", {"cwd": "/w", "approval_policy": "on-request", "model": "gpt-5",
                                  "sandbox_policy": {"type": "read-only"}}),
             env("response_item", {"type": "message", "role": "user",
                                   "content": [{"type": "input_text", "text": "sleep"}]})]
    for i, n in enumerate(NUMBERS):
        args = '{"command":"sleep 1","timeout_ms":' + n + "}"
        lines.append(env("response_item", {"type": "function_call", "name": "shell_command", "arguments": args,
                                           "call_id": f"call_{i}"}))
        lines.append(env("response_item", {"type": "function_call_output", "call_id": f"call_{i}",
                                           "output": "Exit code: 0\nWall time: 1 seconds\nOutput:\n"}))
    path = tmp / "in" / "sessions" / "2026" / "01" / "01" / f"rollout-2026-01-01T00-00-00-{sid}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def _import(tmp: Path, src: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], bytes]:
    out = tmp / "out"
    env = {**os.environ, "REMATCH_LOAD_PLUGINS": "claude_code,codex,omp"}
    res = subprocess.run([sys.executable, "-m", "rematch_trace.cli", "import", str(src), "--out", str(out)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    [trace] = list((out / "traces").glob("*.jsonl"))
    [events] = list((out / "events").glob("*.jsonl"))
    raw = trace.read_bytes()
    return ([json.loads(x) for x in raw.splitlines()], [json.loads(x) for x in events.read_bytes().splitlines()],
            raw)


def test_import_binds_every_literal_exactly(tmp_path: Path) -> None:
    for make in (_claude_code, _codex):
        tmp = tmp_path / make.__name__
        records, events, raw = _import(tmp, make(tmp))
        hashes = [r["args_hash"] for r in records if r["ev"] == "tool_result"]
        fps = [e["action_fingerprint"] for e in events if e["kind"] == "pre_tool_use"]
        assert len(hashes) == len(fps) == len(NUMBERS), make.__name__
        assert None not in hashes and None not in fps
        assert len(set(hashes)) == len(set(fps)) == len(NUMBERS)
        # The trace shows each number as written (its exact value), never a rounded float.
        for n in [*NUMBERS[1:4], "9007199254740993"]:
            assert n.encode() in raw, (make.__name__, n)
        assert b"1.2345678901234567890123456789e+29" in raw and b"1.2345678901234568e+29" not in raw


@given(st.binary(max_size=300) | st.text(alphabet=':,[ "-.eE+0123456789xa{}', max_size=300).map(str.encode))
@settings(max_examples=400, deadline=None)
def test_the_risky_token_search_never_raises(data: bytes) -> None:
    may_be_inexact(data)


def test_thousands_of_digits_in_a_string_or_a_value() -> None:
    digits = b"1" * 5000
    assert _read(b'{"s":":' + digits + b'","n":1}')["n"] == 1
    assert may_be_inexact(b'{"s":":' + digits + b'"}') and may_be_inexact(b"[" + digits + b"]")
    assert _read(b'{"n":' + digits + b"}")["n"] == ExactNumber(exact_text(digits.decode()))


def test_exponents_no_decimal_holds() -> None:
    # Decimal refuses exponents past 10^18; the search and the exact parse compare texts instead.
    huge = b"5E-" + b"2" * 30
    assert _read(b'{"s":":' + huge + b'","n":1}')["n"] == 1
    assert _read(b'{"n":' + huge + b"}")["n"] == ExactNumber("5e-" + "2" * 30)


def test_a_resumed_import_writes_exact_numbers_as_one_pass(tmp_path: Path) -> None:
    # The call with the inexact number is still waiting for its result when the file ends:
    # its shown input sits in the saved state, and must come back exactly.
    src = _claude_code(tmp_path / "whole")
    lines = src.read_bytes().splitlines(keepends=True)
    cut = 3  # the prompt, the 0.1 call and its result; the 0.10000000000000001 call waits
    grow = tmp_path / "grow" / "in" / "projects" / "-w" / src.name
    grow.parent.mkdir(parents=True)
    grow.write_bytes(b"".join(lines[: cut + 1]))
    env = {**os.environ, "REMATCH_LOAD_PLUGINS": "claude_code,codex,omp"}

    def imp(path: Path, out: Path) -> str:
        res = subprocess.run([sys.executable, "-m", "rematch_trace.cli", "import", str(path), "--out", str(out)],
                             capture_output=True, text=True, env=env, timeout=120)
        assert res.returncode == 0, res.stderr
        return res.stdout + res.stderr

    imp(grow, tmp_path / "grow" / "out")
    with open(grow, "ab") as f:
        f.write(b"".join(lines[cut + 1 :]))
    assert "(1 continued)" in imp(grow, tmp_path / "grow" / "out")
    imp(src, tmp_path / "whole" / "out")
    for kind in ("traces", "events"):
        [a] = list((tmp_path / "grow" / "out" / kind).glob("*.jsonl"))
        [b] = list((tmp_path / "whole" / "out" / kind).glob("*.jsonl"))
        assert a.read_bytes() == b.read_bytes(), kind
    [trace] = list((tmp_path / "grow" / "out" / "traces").glob("*.jsonl"))
    assert b'"timeout":0.10000000000000001' in trace.read_bytes()
