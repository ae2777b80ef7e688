"""Live capture through the resident service (``rematch serve``, issue 14): the hook hands each payload over."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from capture_helpers import hook_env, load_fixture, read_jsonl, run_hook

from rematch_trace.store.datafolder import DataDir
from rematch_trace.testing import validate_trace

pytest.importorskip("rematch_trace.live.service", reason="the resident service (issue 14) is not in this build")

SID = "7c1e2a4b-5d6f-4a8b-9c0d-1e2f3a4b5c6d"


def test_the_service_captures_what_the_hook_hands_it(tmp_path: Path, project: Path) -> None:
    data = tmp_path / "data"
    env = hook_env(tmp_path, data, SID, project)
    service = subprocess.Popen([sys.executable, "-m", "rematch_trace.live.service", "--data", str(data), "--quiet"],
                               env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (data / "run" / "events.sock").exists():
            assert time.monotonic() < deadline and service.poll() is None, "rematch serve did not listen"
            time.sleep(0.05)
        # The hook processes can capture nothing themselves (no plugin loaded): what is written, the service wrote.
        env["REMATCH_LOAD_PLUGINS"] = ""
        env["REMATCH_IPC_DEADLINE_MS"] = "20000"
        hooks, _text = load_fixture(project, tmp_path / "absent.jsonl")
        for payload in hooks:
            res = run_hook(payload, env)
            assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")
    finally:
        service.terminate()
        assert service.wait(timeout=60) is not None
    trace = read_jsonl(DataDir(data).trace_path(SID))
    assert validate_trace(trace) == [] and trace[0]["mode"] == "live"
    assert [r["prelabel"] for r in trace if r["ev"] == "input"] == ["none", "revert", "mark:correction"]
    assert len([r for r in trace if r["ev"] == "tool_result"]) == 6
    assert trace[-1]["reasons"] == ["redirect", "error_cluster", "mark"]
    assert not (data / "live" / "errors.log").exists()
    assert os.stat(DataDir(data).events_path(SID)).st_size > 0
