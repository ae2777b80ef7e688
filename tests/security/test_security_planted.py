"""Secrets planted in transcripts of all three harnesses never reach any output byte."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_security_redact import SECRETS

import rematch_claude_code
import rematch_codex
import rematch_omp
from rematch_trace.testing import synthesize_file
from rematch_trace.trace.canonical import args_hash

TEXTS = [text for _, text, _ in SECRETS]
PLANTED = [secret for _, _, secret in SECRETS]
URL_SECRET = "https://deploy:Zq8Lw2pXv9Rt@example.com/hook?token=ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"


def _prompt() -> str:
    return "please use these:\n" + "\n".join(TEXTS[::2])


def _command() -> str:
    return "export X=1; " + " ; ".join(t.replace("\n", " ") for t in TEXTS[1::2])


def _file_content() -> str:
    return "\n".join(TEXTS)


def _output() -> str:
    return "result:\n" + "\n".join(TEXTS)


def _inputs() -> list[tuple[str, str, Any]]:
    """(call id, tool, original input) planted in every harness."""
    return [
        ("c1", "Bash", {"command": _command()}),
        ("c2", "Write", {"file_path": "/w/.env", "content": _file_content()}),
        ("c3", "WebFetch", {"url": URL_SECRET, "prompt": "read it"}),
    ]


def claude_code_file(tmp: Path) -> Path:
    sid = "11111111-2222-3333-4444-555555555555"
    n = [0]

    def base(typ: str, **extra: Any) -> dict[str, Any]:
        n[0] += 1
        return {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/w", "sessionId": sid,
                "version": "2.1.39", "type": typ, "uuid": f"u{n[0]}",
                "timestamp": f"2026-02-10T21:00:{n[0]:02d}.000Z", **extra}

    lines = [base("user", message={"role": "user", "content": _prompt()})]
    for cid, tool, inp in _inputs():
        lines.append(base("assistant", requestId=f"r{cid}", message={
            "id": f"m{cid}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "tool_use", "id": cid, "name": tool, "input": inp}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}}))
        lines.append(base("user", message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": cid, "content": _output()}]}))
    path = tmp / "in" / "projects" / "-w" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return path


def codex_file(tmp: Path) -> Path:
    sid = "019a0000-0000-7000-8000-000000000001"
    t = [1_767_225_600_000]

    def env(kind: str, payload: Any) -> dict[str, Any]:
        t[0] += 10
        ts = dt.datetime.fromtimestamp(t[0] / 1000, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        return {"timestamp": ts, "type": kind, "payload": payload}

    lines = [
        env("session_meta", {"id": sid, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w", "originator": "codex_cli_rs",
                             "cli_version": "0.120.0", "model_provider": "openai"}),
        env("turn_context", {"cwd": "/w", "approval_policy": "never", "model": "gpt-5"}),
        env("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": _prompt()}]}),
        env("event_msg", {"type": "user_message", "message": _prompt()}),
    ]
    codex_inputs = [
        ("c1", "shell", {"command": ["bash", "-lc", _command()]}),
        ("c2", "exec_command", {"cmd": f"cat > /w/.env <<'EOF'\n{_file_content()}\nEOF"}),
        ("c3", "shell", {"command": ["curl", URL_SECRET]}),
    ]
    for cid, tool, inp in codex_inputs:
        lines.append(env("response_item", {"type": "function_call", "name": tool, "arguments": json.dumps(inp), "call_id": cid}))
        lines.append(env("response_item", {"type": "function_call_output", "call_id": cid, "output": _output()}))
    lines.append(env("response_item", {"type": "custom_tool_call", "name": "apply_patch", "call_id": "c4", "status": "completed",
                                       "input": "*** Begin Patch\n*** Add File: /w/.env\n+" + "\n+".join(TEXTS) + "\n*** End Patch"}))
    lines.append(env("response_item", {"type": "custom_tool_call_output", "call_id": "c4", "output": _output()}))
    d = tmp / "in" / "sessions" / "2026" / "01" / "01"
    d.mkdir(parents=True)
    path = d / f"rollout-2026-01-01T00-00-00-{sid}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return path


def omp_file(tmp: Path) -> Path:
    sid = "0198cc2a-0000-7000-8000-000000000001"
    entries: list[dict[str, Any]] = []

    def add(message: dict[str, Any]) -> None:
        i = len(entries) + 1
        entries.append({"type": "message", "id": f"e{i:07d}", "parentId": f"e{i - 1:07d}" if i > 1 else None,
                        "timestamp": f"2026-08-21T14:00:{i:02d}.000Z", "message": message})

    add({"role": "user", "content": [{"type": "text", "text": _prompt()}], "timestamp": 1787320942586})
    omp_inputs = [("c1", "bash", {"command": _command()}), ("c2", "write", {"path": "/w/.env", "content": _file_content()}),
                  ("c3", "fetch", {"url": URL_SECRET})]
    for cid, tool, inp in omp_inputs:
        add({"role": "assistant", "content": [{"type": "toolCall", "id": cid, "name": tool, "arguments": inp}],
             "api": "anthropic-messages", "provider": "anthropic", "model": "claude-opus-4-5",
             "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
             "stopReason": "toolUse", "timestamp": 1787320942599})
        add({"role": "toolResult", "toolCallId": cid, "toolName": tool, "content": [{"type": "text", "text": _output()}],
             "isError": False, "timestamp": 1787320958916})
    add({"role": "assistant", "content": [{"type": "text", "text": "done: " + TEXTS[0]}], "api": "anthropic-messages",
         "provider": "anthropic", "model": "claude-opus-4-5", "usage": {"input": 1, "output": 1}, "stopReason": "stop",
         "timestamp": 1787320959916})
    head = [{"type": "title", "v": 1, "title": "t", "source": "auto"},
            {"type": "session", "version": 3, "id": sid, "timestamp": "2026-08-21T14:02:10.500Z", "cwd": "/w"}]
    path = tmp / "in" / "sessions" / "-w" / f"2026-08-21T14-02-10-500Z_{sid}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in head + entries))
    return path


HARNESSES = {"claude_code": (claude_code_file, rematch_claude_code), "codex": (codex_file, rematch_codex),
             "omp": (omp_file, rematch_omp)}


def _originals(path: Path) -> dict[str, Any]:
    """call id -> original input, read straight from the planted file (not through a plugin)."""
    out: dict[str, Any] = {}
    for line in path.read_bytes().splitlines():
        rec = orjson.loads(line)
        stack = [rec]
        while stack:
            v = stack.pop()
            if isinstance(v, dict):
                if v.get("type") == "tool_use":
                    out[v["id"]] = v["input"]
                elif v.get("type") == "toolCall":
                    out[v["id"]] = v["arguments"]
                elif v.get("type") == "function_call":
                    out[v["call_id"]] = json.loads(v["arguments"])
                stack.extend(v.values())
            elif isinstance(v, list):
                stack.extend(v)
    return out


@pytest.mark.parametrize("harness", sorted(HARNESSES))
def test_no_planted_secret_in_any_output_byte(tmp_path: Path, harness: str) -> None:
    make, module = HARNESSES[harness]
    path = make(tmp_path)
    out = tmp_path / "out"
    sessions = synthesize_file(path, [module], out=out, hint=harness)
    assert sessions and all(s.events for s in sessions)
    written = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.parent.name == "events" for p in written) and any(p.parent.name == "traces" for p in written)
    for p in written:
        data = p.read_bytes()
        for secret in [*PLANTED, "Zq8Lw2pXv9Rt"]:
            assert secret.encode() not in data, f"{secret!r} leaked into {p.relative_to(out)}"
            # JSON escapes ("/" as "\/", newlines) must not hide a leak either.
            assert orjson.dumps(secret)[1:-1] not in data
    # What was planted was seen and redacted (the test is not vacuous).
    events = [e for s in sessions for e in s.events]
    assert sum(e["redaction_count"] for e in events) >= len(PLANTED)
    trace = [r for s in sessions for r in s.records]
    assert any("[REDACTED:" in json.dumps(r) for r in trace if r["ev"] == "input")
    originals = _originals(path)
    results = [r for r in trace if r["ev"] == "tool_result" and r["call_id"] in originals]
    assert results, "no tool_result paired with a planted call"
    for r in results:
        assert r["args_hash"] == args_hash(originals[r["call_id"]])


@pytest.mark.parametrize("harness", sorted(HARNESSES))
def test_raw_trace_keeps_secrets_when_redaction_is_off(tmp_path: Path, harness: str) -> None:
    make, module = HARNESSES[harness]
    sessions = synthesize_file(make(tmp_path), [module], out=tmp_path / "out", hint=harness, redact=False)
    trace = orjson.dumps([r for s in sessions for r in s.records])
    assert any(secret.encode() in trace for secret in PLANTED)
    events = orjson.dumps([e for s in sessions for e in s.events])
    assert not any(secret.encode() in events for secret in PLANTED)
