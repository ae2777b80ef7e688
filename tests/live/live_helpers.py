"""Shared by the live tests: a real ``rematch serve`` process, and hook payloads."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rematch_trace.live import paths
from rematch_trace.live.ipc.codec import MAX_REPLY_BYTES, decode_payload, encode_frame, read_frame

REPO = Path(__file__).resolve().parents[2]
REMATCH = [sys.executable, "-c", "import sys; from rematch_trace.cli import main; sys.argv[0] = 'rematch'; main()"]


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any REMATCH_ setting of the caller, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMATCH_")}
    env.update(extra)
    return env


def rematch(*args: str, timeout: float = 30, **env: str) -> subprocess.CompletedProcess[str]:
    """Run the real ``rematch`` command."""
    return subprocess.run([*REMATCH, *args], capture_output=True, text=True, timeout=timeout, env=clean_env(**env))


def wait_for(predicate: Any, timeout: float = 15.0, what: Any = "condition") -> None:
    """Poll ``predicate`` until true; fail after ``timeout`` seconds (``what``, text or a callable, says for what)."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what() if callable(what) else what}")
        time.sleep(0.02)


def connectable(path: Path) -> bool:
    """Whether something accepts connections on Unix socket ``path``."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(os.fspath(path))
        return True
    except OSError:
        return False
    finally:
        s.close()


@contextmanager
def running_service(data: Path, *args: str) -> Iterator[subprocess.Popen[str]]:
    """``rematch serve --out data`` in a subprocess until the block ends (then SIGTERM, checked exit 0)."""
    proc = subprocess.Popen([*REMATCH, "serve", "--out", str(data), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=clean_env())
    try:
        wait_for(lambda: connectable(paths.control_socket(data)) or proc.poll() is not None, what="the service")
        assert proc.poll() is None, proc.communicate()
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise


def exchange_raw(path: Path, data: bytes, timeout: float = 5.0) -> Any:
    """Send raw bytes on a fresh connection; the decoded reply (``None`` if the service closed without one)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(os.fspath(path))
    try:
        s.sendall(data)
        try:
            return decode_payload(read_frame(s, MAX_REPLY_BYTES, time.monotonic() + timeout))
        except Exception:
            return None
    finally:
        s.close()


def frame(value: Any) -> bytes:
    """One request frame."""
    return encode_frame(value, 1 << 20)


def pre_tool_use(tool: str, tool_input: Any, *, cwd: str = "/work/project", call_id: str = "toolu_01",
                 session: str = "11111111-2222-3333-4444-555555555555", **extra: Any) -> dict[str, Any]:
    """A Claude Code PreToolUse hook input, as the harness writes it on stdin."""
    payload = {
        "session_id": session,
        "transcript_path": f"/root/.claude/projects/-work-project/{session}.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": call_id,
    }
    payload.update(extra)
    return payload
