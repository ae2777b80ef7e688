"""Live export (``rematch serve --export-otlp``): offered after the hook's reply, never waiting, drops counted."""

from __future__ import annotations

import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from export_helpers import rematch
from test_export_otlp import CC, CC_ID, Receiver

from rematch_trace.export.live import LiveExporter, attach


class FakeService:
    """What :func:`attach` uses of the live service: its handler registry, stop hooks and log."""

    def __init__(self) -> None:
        self.handlers: dict[str, Any] = {"hook_event": lambda request, inv: {"decision": "no_override"}}
        self.stops: list[Any] = []
        self.lines: list[str] = []

    def handler(self, kind: str) -> Any:
        return self.handlers.get(kind)

    def register_handler(self, kind: str, handler: Any) -> None:
        self.handlers[kind] = handler

    def at_stop(self, hook: Any) -> None:
        self.stops.append(hook)

    def log(self, line: str) -> None:
        self.lines.append(line)


def imported(tmp_path: Path) -> Path:
    src = tmp_path / "src" / "-home-dev-webapp"
    src.mkdir(parents=True)
    (src / f"{CC_ID}.jsonl").write_text(CC.read_text())
    data = tmp_path / "data"
    assert rematch("import", str(tmp_path / "src"), "--data", str(data)).returncode == 0
    return data


def test_a_hook_event_sends_its_session_after_the_reply(tmp_path: Path) -> None:
    data = imported(tmp_path)
    receiver = Receiver()
    try:
        service = FakeService()
        attach(service, data, receiver.url)
        reply = service.handlers["hook_event"]({"host_payload": {"session_id": CC_ID}}, None)
        assert reply == {"decision": "no_override"}  # the capture's own reply, unchanged
        for stop in service.stops:
            stop(30.0)
        assert receiver.spans(), "nothing sent"
        rows = sqlite3.connect(data / "exports.sqlite").execute("SELECT session_id FROM acked").fetchall()
        assert rows == [(CC_ID,)]
    finally:
        receiver.close()


class Stalled:
    """An endpoint that takes its time: the export thread stays busy while offers pile up."""

    def __init__(self) -> None:
        release = self.release = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                release.wait(20)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def test_offers_never_wait_and_drops_are_counted_and_logged(tmp_path: Path) -> None:
    data = imported(tmp_path)
    stalled = Stalled()
    lines: list[str] = []
    try:
        exporter = LiveExporter(data, stalled.url, log=lines.append, queue_size=4, settle_s=0.0)
        exporter.offer(CC_ID)
        time.sleep(1.0)  # the thread is now inside the stalled request
        worst = 0.0
        for _ in range(200):
            t0 = time.perf_counter()
            exporter.offer(CC_ID)
            worst = max(worst, time.perf_counter() - t0)
        assert worst < 0.05
        assert exporter.dropped == 200 - 4
        assert any("dropped=1 " in ln for ln in lines) and any("dropped=128 " in ln for ln in lines)
        assert len(lines) == 8  # 1, 2, 4, ... 128: a burst does not flood the log
    finally:
        stalled.close()


def test_rematch_serve_exports_a_live_session_with_its_deny(tmp_path: Path) -> None:
    """A real ``rematch serve --export-otlp``, the real hook client: the session's spans arrive, the denied
    call as an ``execute_tool`` span with its verdict event, and the verdict was not slowed."""
    import json
    import subprocess
    import sys

    import orjson

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "capture"))
    from capture_helpers import HOOK_ARGV, REMATCH, hook_env, make_repo, serving

    sid = "4d2c1b0a-9e8f-4a7b-8c6d-5e4f3a2b1c0d"
    receiver = Receiver()
    data = tmp_path / "data"
    env = hook_env(tmp_path, data, sid, service=True)
    env["REMATCH_IPC_DEADLINE_MS"] = "20000"
    try:
        with serving(data, env, [REMATCH, "serve", "--data", str(data), "--export-otlp", receiver.url]):
            repo = make_repo(tmp_path / "repo")
            base = {"session_id": sid, "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(repo),
                    "permission_mode": "default"}
            outside = str(tmp_path / "elsewhere" / "notes.txt")
            steps = [
                {"hook_event_name": "UserPromptSubmit", "prompt": "write the notes"},
                {"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_use_id": "toolu_in",
                 "tool_input": {"file_path": str(repo / "notes.txt"), "content": "x"}},
                {"hook_event_name": "PostToolUse", "tool_name": "Write", "tool_use_id": "toolu_in",
                 "tool_input": {"file_path": str(repo / "notes.txt"), "content": "x"},
                 "tool_response": {"filePath": str(repo / "notes.txt"), "success": True}},
                {"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_use_id": "toolu_out",
                 "tool_input": {"file_path": outside, "content": "x"}},
                {"hook_event_name": "Stop", "last_assistant_message": "I could not write there."},
                {"hook_event_name": "SessionEnd", "reason": "other"},
            ]
            for fields in steps:
                res = subprocess.run(HOOK_ARGV, input=orjson.dumps({**base, **fields}), env=env, capture_output=True,
                                     timeout=60)
                assert res.returncode == 0 and res.stderr == b"", fields["hook_event_name"]
                if fields.get("tool_use_id") == "toolu_out" and fields["hook_event_name"] == "PreToolUse":
                    assert json.loads(res.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
            wait_until = time.monotonic() + 60
            while not any(s.name == "execute_tool Write" and s.events for s in receiver.spans()):
                assert time.monotonic() < wait_until, "the live session's spans did not arrive"
                time.sleep(0.2)
    finally:
        receiver.close()
    spans = receiver.spans()
    blocked = [s for s in spans if s.name == "execute_tool Write" and s.events]
    [event] = [e for e in blocked[-1].events if e.name == "rematch.verdict"]
    verdict = {kv.key: kv.value.string_value for kv in event.attributes}
    assert event.name == "rematch.verdict" and verdict["gen_ai.guardrail.verdict.type"] == "deny"
    assert verdict["gen_ai.guardrail.security.policy.rule.id"] == "policy:write-outside-repository"
    assert blocked[-1].status.code == 2
    assert any(s.name == "invoke_agent claude_code" for s in spans)
