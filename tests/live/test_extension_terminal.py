"""``agent_end.is_terminal`` and the retry-fallback ``model_change`` from pi/omp's extension, through ``rematch-hook omp``.

omp tells an ``agent_end`` after which it continues by itself (an auto-retry) with ``willContinue``;
pi has messages queued. The extension sends them as ``will_continue`` / ``pending``; the trace's
``agent_end`` is then not terminal, and the next run's is. omp's ``retry_fallback_applied`` is a
``model_change`` with the reason ``retry_fallback``, written when it happens. Driven through the real ``rematch-hook``
process (no service), the trace read back from the data folder.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
from live_helpers import clean_env

from rematch_trace.store.datafolder import DataDir

SID = "01a2325f-2992-7301-9818-ea5049f42ec1"
FAILED = {"role": "assistant", "content": [], "provider": "rig", "model": "m1", "stopReason": "error",
          "errorMessage": "overloaded_error", "usage": {"input": 1, "output": 0}}
ANSWER = {"role": "assistant", "content": [{"type": "text", "text": "Done."}], "provider": "rig", "model": "m2",
          "stopReason": "stop", "usage": {"input": 2, "output": 1}}


def _hook(data: Path, event: dict[str, Any]) -> None:
    env = clean_env(REMATCH_LIVE_SERVICE="0", HOME=str(data.parent))
    res = subprocess.run([sys.executable, "-m", "rematch_trace.live.hook_entry", "omp", "--out", str(data)],
                         input=orjson.dumps(event), env=env, capture_output=True, timeout=120)
    assert res.returncode == 0 and res.stdout == b"", res


def test_a_run_omp_continues_and_its_fallback(tmp_path: Path) -> None:
    data = tmp_path / "data"
    base = {"session_id": SID, "cwd": str(tmp_path), "harness_pid": 1, "idle": False,
            "model": {"provider": "rig", "id": "m1"}}
    for name, fields in [
        ("input", {"text": "fix the tests", "source": "interactive"}),
        ("message_end", {"message": FAILED}),
        ("agent_end", {"messages": 2, "stop_reason": "error", "will_continue": True, "pending": False}),
        ("retry_fallback_applied", {"from": "rig/m1", "to": "rig/m2", "role": "default"}),
        ("message_end", {"message": ANSWER}),
        ("agent_end", {"messages": 1, "stop_reason": "stop", "will_continue": False, "pending": False}),
        ("session_shutdown", {"reason": "quit"}),
    ]:
        model = {"provider": "rig", "id": "m1" if name in ("input", "message_end") and fields.get("message") is not ANSWER
                 else "m2"}
        _hook(data, {**base, "model": model, "hook_event_name": name, "event": fields})
    trace = [orjson.loads(x) for x in DataDir(data).trace_path(SID).read_bytes().splitlines()]
    assert [(r["turns"], r["is_terminal"]) for r in trace if r["ev"] == "agent_end"] == [(1, False), (1, True)]
    changes = [(r["from"]["id"], r["to"]["id"], r["reason"]) for r in trace if r["ev"] == "model_change"]
    assert changes == [("m1", "m2", "retry_fallback")]  # once: the next turn's model is the fallback already
    assert [r["ev"] for r in trace][1:] == ["input", "turn_end", "agent_end", "model_change", "turn_end", "agent_end",
                                            "session_shutdown"]
