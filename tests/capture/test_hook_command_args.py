"""``rematch-hook HARNESS --data DIR`` and the fallback log when the hook's interpreter has no rematch.

Through the real commands: ``rematch-hook omp --data DIR`` (and ``pi``, ``--data=DIR``, ``--out DIR``)
captures into DIR, as harness ``omp`` (``pi``), never taking DIR for the harness; the fast client run
by an interpreter without rematch hands the event to ``rematch-hook`` on ``PATH``, whose fallback log
names why no service took it (no service here), not ``service off``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from capture_helpers import HOOK, hook_env

from rematch_trace.live import paths
from rematch_trace.live.install import hook_client

SID = "0198cc2a-0000-7000-8000-0000000000bb"


def _input_event() -> bytes:
    """A payload of rematch's pi/omp extension: a prompt typed."""
    return json.dumps({"hook_event_name": "input", "harness_pid": 4242, "idle": False, "session_id": SID,
                       "cwd": "/work/p", "event": {"text": "hello there", "source": "interactive"}}).encode()


@pytest.mark.parametrize(("harness", "args"), [
    ("omp", ["--data", "{data}"]), ("pi", ["--data", "{data}"]), ("omp", ["--data={data}"]), ("pi", ["--out", "{data}"]),
    ("omp", ["--deadline-ms", "900", "--data", "{data}"]),
])
def test_the_data_folder_is_the_option_s_value_not_the_harness(tmp_path: Path, harness: str, args: list[str]) -> None:
    data, elsewhere = tmp_path / "data", tmp_path / "home-data"
    env = hook_env(tmp_path / "home", elsewhere)  # REMATCH_HOME: what --data overrides
    argv = [HOOK, harness, *(a.format(data=data) for a in args)]
    res = subprocess.run(argv, input=_input_event(), env=env, capture_output=True, timeout=60)
    assert res.returncode == 0 and res.stdout == b"" and res.stderr == b""
    trace = data / "traces" / f"{SID}.jsonl"
    assert trace.is_file(), sorted(str(p) for p in tmp_path.rglob("*"))
    start = json.loads(trace.read_text().splitlines()[0])
    assert (start["ev"], start["agent"]["name"], start["mode"]) == ("session_start", harness, "live")
    assert not elsewhere.exists() and not (data / "live" / "errors.log").exists()


def test_the_fallback_names_the_real_cause_when_the_hooks_interpreter_has_no_rematch(tmp_path: Path) -> None:
    import venv

    venv.create(tmp_path / "bare", with_pip=False)  # an interpreter with nothing installed: no rematch
    base = str(tmp_path / "bare" / "bin" / "python")
    lacks = subprocess.run([base, "-S", "-I", "-c", "import site; site.main(); import rematch_trace"],
                           capture_output=True, timeout=60)
    assert lacks.returncode != 0, f"{base} has rematch: this test needs an interpreter without it"
    data = tmp_path / "data"
    env = hook_env(tmp_path / "home", data, service=True)  # the service asked: none runs here
    env["PATH"] = f"{Path(HOOK).parent}{os.pathsep}{env.get('PATH', '')}"  # rematch-hook, as a user's PATH has it
    call = {"hook_event_name": "PreToolUse", "session_id": SID, "cwd": str(tmp_path), "tool_name": "Bash",
            "tool_use_id": "toolu_1", "tool_input": {"command": "ls"}, "transcript_path": ""}
    res = subprocess.run([base, "-S", "-I", str(hook_client()), "claude_code", "--data", str(data)],
                         input=json.dumps(call).encode(), env=env, capture_output=True, timeout=60)
    assert res.returncode == 0 and res.stdout == b""
    log = paths.log_file(data).read_text()
    [line] = [x for x in log.splitlines() if "fallback" in x and "toolu_1" in x]
    assert "cause='no_service" in line and "service off" not in line, line
    # Captured all the same (the session's live state holds the call), with nothing logged as an error.
    assert (data / "live" / f"{SID}.json").is_file() and not (data / "live" / "errors.log").exists()
