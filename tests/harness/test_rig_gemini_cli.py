"""Gemini CLI, as it ships (the pinned version), against a scripted Gemini API server: the import side.

No live capture (rematch has no Gemini CLI hooks yet). One session of two prompts, the second
resumed (``--resume latest``): a shell command that succeeds and one that fails, write, read,
edit; then the shell again. Checked: every run exits 0 and asked for every step, the model got
each result, and ``rematch import`` of ``~/.gemini/tmp`` (the plugin's own default folder, found
through HOME) gives one session with no skipped record, its prompts and tool calls as many as
the log's, each call a result with its tool, id and args_hash; the security stream has an event
per call; ``search`` finds a prompt and ``doctor`` sees the plugin.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import rig_compare
from rig_session import GeminiCliSession, Prompt, Record

PROMPTS = [Prompt("Use the tools. [rig:tools]"), Prompt("Once more. [rig:again]", resume=True)]
TOOLS = ["run_shell_command", "run_shell_command", "write_file", "read_file", "replace", "run_shell_command"]


def script(project: Path) -> dict[str, Any]:
    """The scenarios (Gemini CLI's file tools want absolute paths)."""
    notes = str(project / "notes.txt")
    return {
        "tools": [
            {"tool": "run_shell_command", "input": {"command": "echo rig-ok"}},
            {"tool": "run_shell_command", "input": {"command": "ls /nonexistent-rig-dir"}},
            {"tool": "write_file", "input": {"file_path": notes, "content": "alpha\nbeta\n"}},
            {"tool": "read_file", "input": {"file_path": notes}},
            {"tool": "replace", "input": {"file_path": notes, "old_string": "beta", "new_string": "gamma",
                                          "instruction": "rename beta"}},
            {"text": "Tools done."},
        ],
        "again": [
            {"tool": "run_shell_command", "input": {"command": "cat notes.txt"}},
            {"text": "Again done."},
        ],
    }


@dataclass
class GeminiOutcome:
    """The session's record, the import's result, its traces and events."""

    session: GeminiCliSession
    script: dict[str, Any]
    record: Record
    import_out: str
    import_err: str
    import_rc: int
    traces: list[list[dict[str, Any]]]
    events: list[list[dict[str, Any]]]


@pytest.fixture(scope="module")
def gemini_outcome(gemini_cli_exe: Path, tmp_path_factory: pytest.TempPathFactory) -> GeminiOutcome:
    """The two prompts run once; the sessions imported from the default folder."""
    root = tmp_path_factory.mktemp("gemini-rig")
    s = GeminiCliSession(root, gemini_cli_exe)
    s.install_hooks()
    steps = script(s.project)
    record = s.run(steps, PROMPTS)
    res = s.rematch("import", "--out", str(s.data), "-j", "1")
    traces = [rig_compare.read_jsonl(p) for p in sorted((s.data / "traces").glob("*.jsonl"))]
    events = [rig_compare.read_jsonl(p) for p in sorted((s.data / "events").glob("*.jsonl"))]
    return GeminiOutcome(s, steps, record, res.stdout, res.stderr, res.returncode, traces, events)


def _log(outcome: GeminiOutcome) -> list[dict[str, Any]]:
    [path] = sorted(outcome.session.transcripts().glob("*/chats/session-*.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_every_run_ends_cleanly(gemini_outcome: GeminiOutcome) -> None:
    """Each gemini process exits 0 in time and asked for every scripted step."""
    for run in gemini_outcome.record.runs:
        assert not run["timed_out"] and run["rc"] == 0, run["stderr"][-2000:]
    steps = {(r["scenario"], r["step"]) for r in gemini_outcome.record.requests}
    for name, steps_of in gemini_outcome.script.items():
        assert {(name, i) for i in range(len(steps_of))} <= steps, name


def test_the_model_gets_each_calls_output(gemini_outcome: GeminiOutcome) -> None:
    """The request after the edit carries its functionResponse; the file was changed."""
    after = gemini_outcome.record.messages("tools")[5]
    parts = after["contents"][-1]["parts"]
    assert any("functionResponse" in p and p["functionResponse"]["name"] == "replace" for p in parts), parts
    assert (gemini_outcome.session.project / "notes.txt").read_text() == "alpha\ngamma\n"
    assert "gamma" in json.dumps(gemini_outcome.record.messages("again")[1]["contents"][-1])


def test_transcript_imports_with_no_skipped_line(gemini_outcome: GeminiOutcome) -> None:
    """``rematch import`` (default folders): exit 0, nothing skipped; prompts and calls counted against the log."""
    assert gemini_outcome.import_rc == 0, gemini_outcome.import_out + gemini_outcome.import_err
    assert "1 sessions imported" in gemini_outcome.import_out, gemini_outcome.import_out
    assert " 0 skipped, 0 failed" in gemini_outcome.import_out, gemini_outcome.import_out
    assert "skipped" not in gemini_outcome.import_err, gemini_outcome.import_err
    log = _log(gemini_outcome)
    call_ids = list(dict.fromkeys(tc["id"] for r in log for tc in r.get("toolCalls") or ()))
    prompts = list(dict.fromkeys(r["id"] for r in log if r.get("type") == "user" and any(
        "text" in p and not p["text"].startswith("<session_context>") for p in r.get("content") or ())))
    [trace] = gemini_outcome.traces
    results = [r for r in trace if r["ev"] == "tool_result"]
    assert [r["call_id"] for r in results] == call_ids
    assert [r["tool"] for r in results] == TOOLS
    assert all(isinstance(r["args_hash"], str) and len(r["args_hash"]) == 64 for r in results)
    assert [r["is_error"] for r in results] == [False, True, False, False, False, False]
    inputs = [r["text"] for r in trace if r["ev"] == "input"]
    assert len(inputs) == len(prompts) and inputs == ["Use the tools. [rig:tools]", "Once more. [rig:again]"]
    start = trace[0]
    assert start["cwd"] == str(gemini_outcome.session.project)
    assert start["model"] == {"provider": "google", "id": "gemini-2.5-flash"}
    usage = [r["usage"] for r in trace if r["ev"] == "turn_end"]
    assert len(usage) == 8 and all(u["totalTokens"] > 0 for u in usage)


def test_security_stream_search_and_doctor(gemini_outcome: GeminiOutcome) -> None:
    """The event stream has each call; search finds a prompt; doctor names the plugin's folder."""
    [events] = gemini_outcome.events
    calls = [e for e in events if e.get("kind") == "pre_tool_use"]
    assert len(calls) == len(TOOLS), [e.get("kind") for e in events]
    assert {e.get("action_type") for e in calls} >= {"shell_exec", "file_write", "file_read", "file_edit"}
    s = gemini_outcome.session
    found = s.rematch("search", "Once more", "--data", str(s.data), "--json")
    assert found.returncode == 0 and "rig:again" in found.stdout, found.stdout + found.stderr
    doctor = s.rematch("doctor", "--data", str(s.data))
    assert "gemini" in doctor.stdout + doctor.stderr, doctor.stdout + doctor.stderr
