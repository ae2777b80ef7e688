"""An event pi's extension sent to the service and then handed to ``rematch-hook`` is applied once.

The extension hands an event over to ``rematch-hook omp`` when the service did not answer it in
time, which the service may still capture. ``REMATCH_HOOK_T_MS`` gives the hook the time the
extension sent it at, so both captures are one invocation (harness, time, payload) and the
trace holds it once. Driven through the real ``rematch-hook`` process.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import orjson
from live_helpers import clean_env

from rematch_trace.store.datafolder import DataDir

SID = "01a2325f-2992-7301-9818-ea5049f42eb5"


def _hand_over(data: Path, event: dict, t: int | None) -> None:
    env = clean_env(REMATCH_LIVE_SERVICE="0", HOME=str(data.parent))
    if t is not None:
        env["REMATCH_HOOK_T_MS"] = str(t)
    res = subprocess.run([sys.executable, "-m", "rematch_trace.live.hook_entry", "omp", "--out", str(data)],
                         input=orjson.dumps(event), env=env, capture_output=True, timeout=120)
    assert res.returncode == 0 and res.stdout == b"", res


def _inputs(data: Path) -> list[str]:
    path = DataDir(data).trace_path(SID)
    lines = [orjson.loads(x) for x in path.read_bytes().splitlines()] if path.exists() else []
    return [r["text"] for r in lines if r["ev"] == "input"]


def _events(cwd: Path) -> list[dict]:
    base = {"session_id": SID, "cwd": str(cwd), "harness_pid": 1, "idle": True, "model": None}
    return [{**base, "hook_event_name": "input", "event": {"text": "fix the tests", "source": "interactive"}},
            {**base, "hook_event_name": "session_shutdown", "event": {"reason": "quit"}}]


def test_the_same_handed_time_is_one_invocation(tmp_path: Path) -> None:
    data = tmp_path / "data"
    prompt, end = _events(tmp_path)
    t = time.time_ns() // 1_000_000
    _hand_over(data, prompt, t)
    _hand_over(data, prompt, t)  # the same event again, with the same time: applied once
    _hand_over(data, end, None)
    assert _inputs(data) == ["fix the tests"]


def test_a_time_far_from_now_is_not_taken(tmp_path: Path) -> None:
    data = tmp_path / "data"
    prompt, end = _events(tmp_path)
    t = time.time_ns() // 1_000_000 - 3_600_000  # an hour ago: not a hand-over, the hook's own time
    _hand_over(data, prompt, t)
    _hand_over(data, prompt, t)
    _hand_over(data, end, None)
    assert _inputs(data) == ["fix the tests", "fix the tests"]
