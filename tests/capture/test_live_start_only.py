"""A live trace that holds less than the transcript never hides it from ``rematch import``.

One ``SessionStart`` payload, then no further hook (the hooks removed, the capture failing): the
import used to keep the near-empty live trace ("kept as captured live") and write nothing, and
``rematch show`` found no session. Now the import and the live trace are weighed (inputs, tool
results, turn ends): the one holding more is the session's. Driven through the installed hook
command and the ``rematch`` CLI.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import orjson
from capture_helpers import REMATCH, hook_env, load_fixture, make_repo, read_jsonl, run_hook

from rematch_trace.store.datafolder import DataDir


def _import(transcript: Path, env: dict[str, str]) -> dict[str, object]:
    res = subprocess.run([REMATCH, "import", str(transcript.parent), "--json", "-j", "1"],
                         capture_output=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    report: dict[str, object] = orjson.loads(res.stdout)
    return report


def test_a_session_start_alone_does_not_hide_the_transcript(tmp_path: Path) -> None:
    project = make_repo(tmp_path / "project")
    transcript = tmp_path / "projects" / "-project" / "s.jsonl"
    transcript.parent.mkdir(parents=True)
    hooks, text = load_fixture(project, transcript)
    sid = hooks[0]["session_id"]
    data = tmp_path / "data"
    env = hook_env(tmp_path / "home", data, sid, project)
    start = next(h for h in hooks if h["hook_event_name"] == "SessionStart")
    assert run_hook(start, env).returncode == 0
    transcript.write_bytes(text)
    dd = DataDir(data)
    # Captured live: the session's live state is there, its trace holds nothing yet.
    assert (data / "live" / f"{sid}.json").exists()
    assert not dd.trace_path(sid).exists() or [r["ev"] for r in read_jsonl(dd.trace_path(sid))] == ["session_start"]

    report = _import(transcript, env)
    assert (report["sessions_imported"], report["sessions_kept_live"]) == (1, 0)
    trace = read_jsonl(dd.trace_path(sid))
    assert sum(r["ev"] == "input" for r in trace) >= 1 and any(r["ev"] == "tool_result" for r in trace)
    shown = subprocess.run([REMATCH, "show", sid, "--json", "--out", str(data)], capture_output=True, env=env,
                           timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert read_jsonl(dd.trace_path(sid)) == [orjson.loads(x) for x in shown.stdout.splitlines() if x.strip()]
    # Imported once, the file is unchanged for the next run (not weighed again, not kept live).
    assert _import(transcript, env)["sessions_kept_live"] == 0
