"""A live session whose final records landed but whose ledger row did not: every reading command settles it.

The state is made for real: ``rematch serve`` ends the session while the test holds the
ledger's write lock (so the row cannot be written), and is killed with SIGKILL there. Each
command then runs, as a process, on its own copy of that data folder.
"""

from __future__ import annotations

import shutil
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from capture_helpers import HOOK_ARGV, REMATCH, hook_env, make_repo, run_hook

from rematch_trace.live import paths
from rematch_trace.store.datafolder import DataDir
from rematch_trace.store.ledger import Ledger

SID = "unsettled-1"


def _rows(data: Path) -> list[str]:
    db = sqlite3.connect(data / "ledger.sqlite")
    try:
        return [r[0] for r in db.execute("SELECT session_id FROM sessions")]
    finally:
        db.close()


def _wait(what: Callable[[], bool], proc: subprocess.Popen[bytes], why: str) -> None:
    deadline = time.monotonic() + 60
    while not what():
        assert time.monotonic() < deadline and proc.poll() is None, why
        time.sleep(0.02)


def _state(data: Path) -> dict[str, Any]:
    path = data / "live" / f"{SID}.json"
    try:
        return dict(orjson.loads(path.read_bytes()))
    except (OSError, orjson.JSONDecodeError):
        return {}


@pytest.fixture(scope="module")
def unsettled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A data folder whose live session ended (final records written) with no ledger row: serve was killed."""
    root = tmp_path_factory.mktemp("unsettled")
    data = root / "data"
    repo = make_repo(root / "repo")
    env = hook_env(root, data, SID, service=True)
    data.mkdir(mode=0o700)
    Ledger(data / "ledger.sqlite").close()  # the ledger exists, so the test can hold its write lock
    service = subprocess.Popen([REMATCH, "serve", "--out", str(data)], env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    hook_env_ = dict(env, REMATCH_LOAD_PLUGINS="", REMATCH_IPC_DEADLINE_MS="60000")  # only the service captures
    base = {"session_id": SID, "cwd": str(repo)}
    hook: subprocess.Popen[bytes] | None = None
    db = sqlite3.connect(data / "ledger.sqlite", isolation_level=None)
    try:
        _wait(paths.events_socket(data).exists, service, "rematch serve did not listen")
        for fields in ({"hook_event_name": "UserPromptSubmit", "prompt": "no, that is wrong"},
                       {"hook_event_name": "Stop", "last_assistant_message": "Sorry."}):
            assert run_hook({**base, **fields}, hook_env_).returncode == 0
        db.execute("BEGIN EXCLUSIVE")  # the service's ledger write waits on this
        hook = subprocess.Popen(HOOK_ARGV, stdin=subprocess.PIPE, env=hook_env_, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        assert hook.stdin is not None
        hook.stdin.write(orjson.dumps({**base, "hook_event_name": "SessionEnd", "reason": "other"}))
        hook.stdin.close()
        # The final records are written and the state saved as ended, not recorded: kill both there.
        _wait(lambda: bool(_state(data).get("ended")), service, "the service never ended the session")
        hook.kill()
        service.send_signal(signal.SIGKILL)
        service.wait(timeout=60)
    finally:
        db.close()
        if hook is not None and hook.poll() is None:
            hook.kill()
        if service.poll() is None:
            service.kill()
    assert _state(data)["recorded"] is False and _rows(data) == []
    assert orjson.loads(DataDir(data).trace_path(SID).read_bytes().splitlines()[-1])["ev"] == "session_shutdown"
    return data, env


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("run"))  # the dead service's sockets
    return dst


def _ids(out: bytes) -> list[str]:
    return [r["session_id"] for r in orjson.loads(out)]


@pytest.mark.parametrize("command", ["sessions", "stats", "report", "import", "flagged", "show", "audit"])
def test_every_reading_command_settles_a_session_whose_row_was_lost(
        tmp_path: Path, unsettled: tuple[Path, dict[str, str]], command: str) -> None:
    src, env = unsettled
    data = _copy(src, tmp_path / "data")
    env = dict(env, REMATCH_HOME=str(data))
    empty = tmp_path / "empty"
    empty.mkdir()
    argv = {
        "sessions": ["sessions", "--json"],
        "stats": ["stats", "--json"],
        "report": ["report", "--out", str(tmp_path / "report")],
        "import": ["import", str(empty), "--json"],
        "flagged": ["flagged", "--json"],
        "show": ["show", SID],
        "audit": ["audit", SID, "--json"],
    }[command]
    res = subprocess.run([REMATCH, *argv], capture_output=True, env=env, timeout=120)
    out = res.stdout
    if command == "sessions" or command == "flagged":
        assert res.returncode == 0, res.stderr
        assert _ids(out) == [SID]
    elif command == "stats":
        assert res.returncode == 0, res.stderr
        assert b'"sessions": 1' in out, out[:2000]
    elif command == "report":
        assert res.returncode == 0, res.stderr
        assert out.startswith(b"1 session(s)"), out
        assert SID in (tmp_path / "report" / "index.html").read_text()
    elif command == "import":
        assert orjson.loads(out)["sessions_total"] == 1, out
    elif command == "audit":
        # The session holds no risky action: nothing found is exit status 1, with its empty list.
        assert res.returncode == 1 and orjson.loads(out) == [], res.stderr
    else:
        assert res.returncode == 0, res.stderr
    assert _rows(data) == [SID]


def test_watch_settles_a_session_whose_row_was_lost(tmp_path: Path, unsettled: tuple[Path, dict[str, str]]) -> None:
    src, env = unsettled
    data = _copy(src, tmp_path / "data")
    empty = tmp_path / "empty"
    empty.mkdir()
    log = tmp_path / "watch.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen([REMATCH, "watch", str(empty), "--out", str(data), "-v"], env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
        try:
            _wait(lambda: b"caught up" in log.read_bytes(), proc, "rematch watch never caught up")
            assert _rows(data) == [SID], log.read_text()
        finally:
            proc.terminate()
            proc.wait(timeout=60)
