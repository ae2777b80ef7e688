"""No planted secret anywhere in the data folder: import, continued import, watch, live capture.

Every kind of secret the redactor knows (tests/security/test_security_redact.py's
SECRETS) is planted in a Claude Code transcript and in live hook payloads (and,
below, in a Codex rollout and an omp session, each imported as it grows). After
an import, a continued import of the grown file, ``rematch watch`` run as a
process, and live capture through the hook client and a real ``rematch serve``
(one session cut off mid-call: its PreToolUse delivered, no PostToolUse, then
the service killed), every file of the data folder (recursively: traces,
events, journal/, live/, logs, the ledger's -wal) and every column of every
table of ``ledger.sqlite`` (read through sqlite3) is searched for each secret's
raw value.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from capture_helpers import REMATCH, hook_env, make_repo, read_jsonl, run_hook

from rematch_trace.live import paths
from rematch_trace.store.datafolder import DataDir

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "security"))
from test_security_planted import PLANTED, TEXTS, claude_code_file, codex_file, omp_file

SECRET_TEXT = "\n".join(TEXTS)


def _needles() -> list[bytes]:
    out = []
    for s in PLANTED:
        out += [s.encode(), orjson.dumps(s)[1:-1]]
    return out


def _leaks(data: Path) -> list[str]:
    """Each (place, secret) where a planted secret's raw value is found in the data folder."""
    needles = _needles()
    found = []
    for p in sorted(data.rglob("*")):
        if p.is_file():
            body = p.read_bytes()
            found += [f"{p.relative_to(data)}: {n!r}" for n in needles if n in body]
    con = sqlite3.connect(f"file:{data / 'ledger.sqlite'}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("select name from sqlite_master where type = 'table'")]
        for table in tables:
            for row in con.execute(f'select * from "{table}"'):
                for value in row:
                    body = value if isinstance(value, bytes) else str(value).encode()
                    found += [f"ledger {table}: {n!r}" for n in needles if n in body]
    finally:
        con.close()
    return found


def _wait(predicate: object, what: str, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_no_planted_secret_anywhere_in_the_data_folder(tmp_path: Path) -> None:
    data = tmp_path / "data"
    # 1. An import of a transcript cut mid-call, then its continuation once it has grown.
    path = claude_code_file(tmp_path)
    whole = path.read_bytes()
    path.write_bytes(b"".join(whole.splitlines(keepends=True)[:4]))  # the second call open
    env = hook_env(tmp_path, data, service=True)
    subprocess.run([REMATCH, "import", "--out", str(data), str(path)], env=env, check=True, capture_output=True)
    assert _leaks(data) == []
    path.write_bytes(whole)
    subprocess.run([REMATCH, "import", "--out", str(data), str(path)], env=env, check=True, capture_output=True)
    assert _leaks(data) == []
    # 2. rematch watch, as a process, while a second transcript is written and grows.
    other = claude_code_file(tmp_path / "w")
    body = other.read_bytes().replace(b"11111111-2222", b"22222222-2222")
    moved = other.with_name(other.name.replace("11111111-2222", "22222222-2222"))
    other.unlink()
    cut = body.splitlines(keepends=True)
    moved.write_bytes(b"".join(cut[:2]))
    watch = subprocess.Popen([REMATCH, "watch", "--out", str(data), "--poll", str(moved.parent)], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        ledger = DataDir(data)
        _wait(lambda: ledger.trace_path("22222222-2222-3333-4444-555555555555").exists(), "watch's first import")
        moved.write_bytes(b"".join(cut[:5]))
        time.sleep(2)
        moved.write_bytes(body)
        time.sleep(2)
    finally:
        watch.send_signal(signal.SIGTERM)
        _, err = watch.communicate(timeout=60)
    assert watch.returncode == 0, err
    assert _leaks(data) == []
    # 3. Live: the hook client and rematch serve; a session cut off mid-call, the service killed.
    repo = make_repo(tmp_path / "repo")
    service = subprocess.Popen([sys.executable, "-m", "rematch_trace.live.service", "--data", str(data), "--quiet"],
                               env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        _wait(lambda: paths.events_socket(data).exists(), "rematch serve")
        env["REMATCH_IPC_DEADLINE_MS"] = "20000"
        for sid, cut_off in (("live-done", False), ("live-cut", True)):
            base = {"session_id": sid, "cwd": str(repo), "transcript_path": str(tmp_path / "absent.jsonl")}
            events = [
                {"hook_event_name": "UserPromptSubmit", "prompt": "use these:\n" + SECRET_TEXT},
                {"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_use_id": "t1",
                 "tool_input": {"file_path": str(repo / ".env"), "content": SECRET_TEXT}},
            ]
            if not cut_off:
                events += [
                    {"hook_event_name": "PostToolUse", "tool_name": "Write", "tool_use_id": "t1",
                     "tool_input": {"file_path": str(repo / ".env"), "content": SECRET_TEXT},
                     "tool_response": {"stdout": SECRET_TEXT, "stderr": SECRET_TEXT}},
                    {"hook_event_name": "StopFailure", "error": "API error: " + SECRET_TEXT,
                     "last_assistant_message": SECRET_TEXT},
                    {"hook_event_name": "SessionEnd", "reason": "other"},
                ]
            for fields in events:
                assert run_hook({**base, **fields}, env).returncode == 0
    finally:
        service.kill()  # mid-call for "live-cut": no PostToolUse, no end
        service.wait(timeout=60)
    trace = read_jsonl(DataDir(data).trace_path("live-done"))
    stops = [r["stop_reason"] for r in trace if r["ev"] == "turn_end"]
    assert stops and all(s.startswith("API error: ") for s in stops)
    assert any("[REDACTED:" in s for s in stops)  # the StopFailure error, redacted (was kept as sent)
    assert (DataDir(data).trace_path("live-cut")).exists()
    assert _leaks(data) == []


@pytest.mark.parametrize(("harness", "cuts"), [("codex", (5, 6, 8, 11)), ("omp", (3, 4, 6))])
def test_no_planted_secret_after_codex_and_omp_imports(tmp_path: Path, harness: str, cuts: tuple[int, ...]) -> None:
    """A Codex rollout and an omp session imported as they grow (a call open, its output waiting, ...)."""
    data = tmp_path / "data"
    path = codex_file(tmp_path) if harness == "codex" else omp_file(tmp_path)
    whole = path.read_bytes()
    lines = whole.splitlines(keepends=True)
    env = hook_env(tmp_path, data, service=True)
    for n in (*cuts, len(lines)):
        path.write_bytes(b"".join(lines[:n]))
        subprocess.run([REMATCH, "import", "--out", str(data), str(path)], env=env, check=True, capture_output=True)
        assert _leaks(data) == [], f"after an import of {n} lines"
    assert len(list((data / "traces").rglob("*.jsonl"))) == 1
