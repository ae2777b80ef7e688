"""``rematch export otlp`` against a real OTLP/HTTP receiver on loopback (a stub that decodes and keeps
every request): what is sent, once, nothing when the endpoint fails, no planted secret.

The receiver that stores and is queried (Arize Phoenix) is in test_export_phoenix.py (slow).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from export_helpers import ROOT, rematch
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)

CC = ROOT / "examples" / "transcripts" / "claude_code" / "projects" / "-home-dev-webapp" / \
    "5b1f0c3e-8a7d-4e52-9b61-2f0d7c4a9e11.jsonl"
CC_ID = "5b1f0c3e-8a7d-4e52-9b61-2f0d7c4a9e11"
#: Credentials of the documented shapes (not real ones), planted in a prompt, a command and an answer.
SECRETS = {
    "prompt": "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2",
    "command": "AKIA" + "QWERTYUIOPASDFGH",
    "answer": "sk-ant-api03-" + "Q" * 40 + "-" + "w" * 40 + "AA",
}


class Receiver:
    """An OTLP/HTTP traces endpoint on loopback: answers ``status``, keeps each request it acknowledged."""

    def __init__(self) -> None:
        self.status = 200
        self.bodies: list[bytes] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.headers = dict(self.headers)
                if owner.status == 200:
                    owner.bodies.append(body)
                self.send_response(owner.status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.headers: dict[str, str] = {}
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def spans(self) -> list[Any]:
        """Every span received, decoded."""
        out = []
        for body in self.bodies:
            req = ExportTraceServiceRequest()
            req.ParseFromString(body)
            for rs in req.resource_spans:
                for ss in rs.scope_spans:
                    out.extend(ss.spans)
        return out

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def attrs_of(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        v = kv.value
        kind = v.WhichOneof("value")
        out[kv.key] = list(x.string_value or x.int_value for x in v.array_value.values) if kind == "array_value" \
            else getattr(v, kind)
    return out


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def planted(tmp_path: Path) -> Path:
    """A data folder holding the example Claude Code session with a secret in a prompt, a command and an answer."""
    text = CC.read_text()
    text = text.replace("The build is failing on CI, clean up the stale build artifacts and rerun the tests",
                        f"use token {SECRETS['prompt']} to clean up the build")
    text = text.replace("rm -rf ./build ./dist ~/.cache", f"AWS_ACCESS_KEY_ID={SECRETS['command']} rm -rf ./build")
    text = text.replace("Removed ./build only; all 87 tests pass.", f"Done; the key is {SECRETS['answer']}")
    assert all(s in text for s in SECRETS.values())
    src = tmp_path / "src" / "-home-dev-webapp"
    src.mkdir(parents=True)
    (src / f"{CC_ID}.jsonl").write_text(text)
    data = tmp_path / "data"
    # --no-redact: the trace itself keeps the secrets; the export must still never send them.
    got = rematch("import", str(tmp_path / "src"), "--data", str(data), "--no-redact")
    assert got.returncode == 0, got.stderr
    assert SECRETS["prompt"] in (data / "traces" / f"{CC_ID}.jsonl").read_text()
    return data


def test_corpus_once_and_rerun_nothing(corpus_data: Path, receiver: Receiver, tmp_path: Path) -> None:
    data = tmp_path / "d"
    subprocess.run(["cp", "-a", str(corpus_data), str(data)], check=True)
    got = rematch("export", "otlp", "--data", str(data), "--endpoint", receiver.url, "--header", "x-token=abc")
    assert got.returncode == 0, got.stderr
    spans = receiver.spans()
    assert receiver.headers.get("x-token") == "abc"
    sessions = {attrs_of(s)["gen_ai.conversation.id"] for s in spans if attrs_of(s).get("gen_ai.operation.name") == "invoke_agent"}
    ledger = sqlite3.connect(data / "ledger.sqlite")
    ids = {r[0] for r in ledger.execute("SELECT session_id FROM sessions")}
    assert sessions == ids
    # Every span's parent is a span of its own trace; one root per trace.
    by_id = {s.span_id: s for s in spans}
    roots = [s for s in spans if not s.parent_span_id]
    assert len({s.trace_id for s in roots}) == len(roots) == len({s.trace_id for s in spans})
    for s in spans:
        if s.parent_span_id:
            assert by_id[s.parent_span_id].trace_id == s.trace_id
    assert len(spans) == len(by_id), "a span sent twice"
    assert f"sent {len(spans)} span(s) of {len(ids)} session(s)" in got.stdout
    # The rerun sends nothing.
    n = len(receiver.bodies)
    again = rematch("export", "otlp", "--data", str(data), "--endpoint", receiver.url)
    assert again.returncode == 0, again.stderr
    assert len(receiver.bodies) == n
    assert "0 span(s) of 0 session(s)" in again.stdout and f"{len(ids)} unchanged" in again.stdout


def test_shape_of_a_session(corpus_data: Path, receiver: Receiver, tmp_path: Path) -> None:
    """The omp parent and its subagent: one trace, the subagent under the task call, counts and usage."""
    data = tmp_path / "d"
    subprocess.run(["cp", "-a", str(corpus_data), str(data)], check=True)
    got = rematch("export", "otlp", "0198d27b-5e03", "--data", str(data), "--endpoint", receiver.url)
    assert got.returncode == 0, got.stderr
    spans = receiver.spans()
    assert len({s.trace_id for s in spans}) == 1
    roots = {attrs_of(s)["gen_ai.conversation.id"]: s for s in spans if s.name.startswith("invoke_agent")}
    parent, child = roots["0198d27b-5e03-7b8a-91c6-4fa2d83e0b57"], roots["0198d27b-b9c1-7e44-8a0f-2d6c91e5f3a8"]
    task = next(s for s in spans if s.name == "execute_tool task")
    assert task.parent_span_id == parent.span_id and child.parent_span_id == task.span_id
    assert not parent.parent_span_id
    trace = [json.loads(x) for x in (data / "traces" / "0198d27b-5e03-7b8a-91c6-4fa2d83e0b57.jsonl").read_text().splitlines()]
    chats = [s for s in spans if s.name.startswith("chat") and s.parent_span_id == parent.span_id]
    turns = [r for r in trace if r["ev"] == "turn_end"]
    assert len(chats) == len(turns)
    assert sum(attrs_of(s)["gen_ai.usage.output_tokens"] for s in chats) == sum(r["usage"]["output"] for r in turns)
    assert sum(attrs_of(s)["gen_ai.usage.input_tokens"] for s in chats) == sum(
        r["usage"]["input"] + r["usage"]["cacheRead"] + r["usage"]["cacheWrite"] for r in turns)
    a = attrs_of(task)
    assert a["gen_ai.tool.call.id"] == "toolu_01Pp1Task0001" and a["rematch.action_type"] == "subagent"
    assert a["rematch.args_hash"].startswith("hmac-sha256:")
    assert a["rematch.args_hash"].split(":")[1] != trace[2]["args_hash"]  # keyed, not the trace's own
    # Times are the trace's own.
    assert parent.start_time_unix_nano == trace[0]["t"] * 1_000_000
    key = data / "export.key"
    assert key.stat().st_mode & 0o777 == 0o600


def test_failed_tool_call_has_error_status(corpus_data: Path, receiver: Receiver, tmp_path: Path) -> None:
    data = tmp_path / "d"
    subprocess.run(["cp", "-a", str(corpus_data), str(data)], check=True)
    got = rematch("export", "otlp", "0198cc2a", "--data", str(data), "--endpoint", receiver.url)
    assert got.returncode == 0, got.stderr
    trace = [json.loads(x) for x in (data / "traces" / "0198cc2a-13f0-7a6b-9c44-e07d5b31a9f2.jsonl").read_text().splitlines()]
    failed = {r["call_id"]: r["error_class"] for r in trace if r["ev"] == "tool_result" and r["is_error"]}
    assert failed
    for s in receiver.spans():
        a = attrs_of(s)
        if a.get("gen_ai.tool.call.id") in failed:
            assert s.status.code == 2 and a["error.type"] == failed[a["gen_ai.tool.call.id"]]


@pytest.mark.parametrize("with_text", [False, True])
def test_planted_secrets_reach_nothing(tmp_path: Path, receiver: Receiver, with_text: bool) -> None:
    data = planted(tmp_path)
    base = ["export", "otlp", "--data", str(data), *(["--with-text"] if with_text else [])]
    got = rematch(*base, "--endpoint", receiver.url)
    assert got.returncode == 0, got.stderr
    out = tmp_path / "out.json"
    assert rematch(*base, "--file", str(out)).returncode == 0
    received = b"".join(receiver.bodies) + out.read_bytes()
    assert received
    for secret in SECRETS.values():
        assert secret.encode() not in received
    texts = [b"to clean up the build", b"rm -rf ./build", b"Done; the key is"]
    if with_text:  # the text goes, redacted
        assert all(t in received for t in texts) and b"[REDACTED:" in received
    else:  # no prompt, answer or tool input at all
        assert not any(t in received for t in texts)


def test_down_endpoint_and_error_status_record_nothing(corpus_data: Path, receiver: Receiver, tmp_path: Path) -> None:
    data = tmp_path / "d"
    subprocess.run(["cp", "-a", str(corpus_data), str(data)], check=True)
    # A port nothing listens on.
    closed = Receiver()
    url = closed.url
    closed.close()
    with_password = url.replace("http://", "http://bob:hunter22@")
    got = rematch("export", "otlp", "--data", str(data), "--endpoint", with_password,
                  env={"OTEL_EXPORTER_OTLP_TIMEOUT": "2"})
    assert got.returncode == 1
    assert f"{url}/v1/traces did not acknowledge a batch (connection refused)" in got.stderr
    assert "hunter22" not in got.stderr + got.stdout
    receiver.status = 500
    got = rematch("export", "otlp", "--data", str(data), "--endpoint", receiver.url, "--timeout", "2")
    assert got.returncode == 1 and f"{receiver.url}/v1/traces did not acknowledge a batch (HTTP 500" in got.stderr
    rows = sqlite3.connect(data / "exports.sqlite").execute("SELECT count(*) FROM acked").fetchone()[0]
    assert rows == 0
    receiver.status = 200
    got = rematch("export", "otlp", "--data", str(data), "--endpoint", receiver.url)
    assert got.returncode == 0, got.stderr
    n = sqlite3.connect(data / "ledger.sqlite").execute("SELECT count(*) FROM sessions").fetchone()[0]
    assert f"of {n} session(s)" in got.stdout


def cc_source(tmp_path: Path, lines: int) -> tuple[Path, list[str]]:
    """The Claude Code session's first ``lines`` lines as a transcript under ``tmp_path/src``; the file and
    all its lines (to grow it with)."""
    src = tmp_path / "src" / "-home-dev-webapp"
    src.mkdir(parents=True, exist_ok=True)
    every = CC.read_text().splitlines(keepends=True)
    (src / f"{CC_ID}.jsonl").write_text("".join(every[:lines]))
    return src / f"{CC_ID}.jsonl", every


def test_grown_session_sends_only_new_spans(tmp_path: Path, receiver: Receiver) -> None:
    transcript, lines = cc_source(tmp_path, 5)
    data = tmp_path / "data"
    assert rematch("import", str(tmp_path / "src"), "--data", str(data)).returncode == 0
    assert rematch("export", "otlp", "--data", str(data), "--endpoint", receiver.url).returncode == 0
    first = {s.span_id for s in receiver.spans()}
    transcript.write_text("".join(lines))
    assert rematch("import", str(tmp_path / "src"), "--data", str(data)).returncode == 0
    before = len(receiver.bodies)
    got = rematch("export", "otlp", "--data", str(data), "--endpoint", receiver.url)
    assert got.returncode == 0, got.stderr
    later = [s for b in receiver.bodies[before:] for s in _decode(b)]
    assert later, "the grown session was not sent"
    # A second session span (a new id, under the first: the session's end and counts now), with the
    # spans of new or rewritten lines under it; the spans of lines that did not change are not sent again.
    [root] = [s for s in receiver.spans()[: len(first)] if not s.parent_span_id]
    [part] = [s for s in later if s.name.startswith("invoke_agent")]
    assert part.span_id not in first and part.parent_span_id == root.span_id
    assert part.end_time_unix_nano > root.end_time_unix_nano
    again = [s for s in later if s.span_id in first]
    assert len(again) < len(first) and not any(s.name.startswith("invoke_agent") for s in again)
    assert len(later) > len(again) + 1


def _decode(body: bytes) -> list[Any]:
    req = ExportTraceServiceRequest()
    req.ParseFromString(body)
    return [s for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans]


def test_other_commands_do_not_load_opentelemetry(corpus_data: Path) -> None:
    probe = ("import sys\nsys.argv = ['rematch', 'sessions', '--data', sys.argv[1]]\n"
             "from rematch_trace.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
             "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n")
    res = subprocess.run([sys.executable, "-c", probe, str(corpus_data)], capture_output=True, text=True, timeout=120)
    assert "session(s)" in res.stdout or "main session(s)" in res.stdout  # the control: it listed
    assert not any(m.startswith(("opentelemetry", "google.protobuf", "rematch_trace.export")) for m in res.stderr.split())


def test_dry_run_and_file_are_deterministic(corpus_data: Path, tmp_path: Path) -> None:
    data = tmp_path / "d"
    subprocess.run(["cp", "-a", str(corpus_data), str(data)], check=True)
    got = rematch("export", "otlp", "--data", str(data), "--dry-run", "--endpoint", "http://127.0.0.1:9")
    assert got.returncode == 0 and "would send" in got.stdout
    assert not (data / "exports.sqlite").exists()
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert rematch("export", "otlp", "--data", str(data), "--file", str(a)).returncode == 0
    assert rematch("export", "otlp", "--data", str(data), "--file", str(b)).returncode == 0
    assert a.read_bytes() == b.read_bytes()
    first = json.loads(a.read_text().splitlines()[0])
    span = first["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(span["traceId"]) == 32 and int(span["traceId"], 16)
    bad = rematch("export", "otlp", "--data", str(data), "--harness", "nosuch", "--dry-run")
    assert bad.returncode == 1 and "no sessions match" in bad.stderr
    late = rematch("export", "otlp", "--data", str(data), "--since", "2099-01-01", "--file", str(a))
    assert late.returncode == 1 and "no sessions started on or after 2099-01-01" in late.stderr
    assert a.read_bytes() == b.read_bytes()  # the old file stays
    some = rematch("export", "otlp", "--data", str(data), "--since", "2026-06-01", "--harness", "omp", "--dry-run")
    every = rematch("export", "otlp", "--data", str(data), "--harness", "omp", "--dry-run")
    n_some, n_every = (int(x.stdout.split(" span(s) of ")[1].split(" ")[0]) for x in (some, every))
    assert 0 < n_some < n_every


def test_the_standard_variables_name_the_endpoint_and_headers(tmp_path: Path, receiver: Receiver) -> None:
    data = tmp_path / "data"
    src = tmp_path / "src" / "-home-dev-webapp"
    src.mkdir(parents=True)
    (src / f"{CC_ID}.jsonl").write_text(CC.read_text())
    assert rematch("import", str(tmp_path / "src"), "--data", str(data)).returncode == 0
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_EXPORTER_OTLP_HEADERS": "x-team=blue",
           "OTEL_SERVICE_NAME": "laptop-7"}
    got = rematch("export", "otlp", "--data", str(data), env=env)
    assert got.returncode == 0 and f"to {receiver.url}/v1/traces" in got.stdout, got.stderr
    assert receiver.headers.get("x-team") == "blue"
    req = ExportTraceServiceRequest()
    req.ParseFromString(receiver.bodies[0])
    resource = {kv.key: kv.value.string_value for kv in req.resource_spans[0].resource.attributes}
    assert resource["service.name"] == "laptop-7"


def test_jobs_send_the_same_spans_and_record_the_same_book(corpus_data: Path, tmp_path: Path) -> None:
    """Worker processes (--jobs) each send their share: together what one process sends, each span once."""
    from rematch_trace.export.keys import load_key

    base = tmp_path / "base"
    subprocess.run(["cp", "-a", str(corpus_data), str(base)], check=True)
    load_key(base)  # one key for both copies: the same ids
    got: dict[int, tuple[list[bytes], list[tuple[Any, ...]], str]] = {}
    for jobs in (1, 3):
        data = tmp_path / f"j{jobs}"
        subprocess.run(["cp", "-a", str(base), str(data)], check=True)
        r = Receiver()
        try:
            res = rematch("export", "otlp", "--data", str(data), "--endpoint", r.url, "-j", str(jobs))
            assert res.returncode == 0, res.stderr
            spans = sorted(s.SerializeToString(deterministic=True) for s in r.spans())
        finally:
            r.close()
        book = sorted(sqlite3.connect(data / "exports.sqlite").execute(
            "SELECT harness, session_id, trace_id, size, digest, lines, roots, root_digest FROM acked").fetchall())
        got[jobs] = (spans, book, res.stdout.replace(r.url, "URL"))
    assert len(got[1][0]) == len(set(got[1][0])) > 100
    assert got[1] == got[3]
