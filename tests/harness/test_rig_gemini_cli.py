"""Gemini CLI, as it ships (the pinned version), against a scripted Gemini API server: the import side.

No live capture (rematch has no Gemini CLI hooks yet). One session of four prompts, each after
the first resumed (``--resume latest``): a shell command that succeeds and one that fails, write,
read, edit; the shell again; a subagent (``invoke_agent`` of the built-in ``generalist``, which
runs a command and calls ``complete_task``); a custom command (``~/.gemini/commands/greet.toml``).
``rematch import`` of ``~/.gemini/tmp`` (the plugin's own default folder, found through HOME)
runs after the first prompt and again after the last, which continues the log.

Checked: every run exits 0 and asked for every step, the model got each result; the import has
no skipped record, its prompts and tool calls as many as the logs' (the subagent's its own
session, naming its parent), each call a result with its tool, id and args_hash; the continued
trace is the one a fresh import gives; the security stream has an event per call; ``search``
finds a prompt and ``doctor`` sees the plugin.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import rig_compare
from rig_session import GeminiCliSession, Prompt, Record

FIRST = [Prompt("Use the tools. [rig:tools]")]
LATER = [Prompt("Once more. [rig:again]", resume=True), Prompt("Delegate. [rig:sub]", resume=True),
         Prompt("/greet the team", resume=True)]
TOOLS = ["run_shell_command", "run_shell_command", "write_file", "read_file", "replace", "run_shell_command",
         "invoke_agent"]
INPUTS = ["Use the tools. [rig:tools]", "Once more. [rig:again]", "Delegate. [rig:sub]",
          "Say hello to the team. [rig:custom]"]


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
        "sub": [
            {"tool": "invoke_agent", "input": {"agent_name": "generalist", "prompt": "Check it. [rig:inner]"}},
            {"text": "Sub done."},
        ],
        "inner": [
            {"tool": "run_shell_command", "input": {"command": "echo sub-ok"}},
            {"tool": "complete_task", "input": {"result": {"response": "inner done"}}},
        ],
        "custom": [{"text": "Hello there."}],
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
    first_out: str
    fresh: list[list[dict[str, Any]]]


@pytest.fixture(scope="module")
def gemini_outcome(gemini_cli_exe: Path, tmp_path_factory: pytest.TempPathFactory) -> GeminiOutcome:
    """The two prompts run once; the sessions imported from the default folder."""
    root = tmp_path_factory.mktemp("gemini-rig")
    s = GeminiCliSession(root, gemini_cli_exe)
    s.install_hooks()
    commands = s.gemini_home / "commands"
    commands.mkdir()
    (commands / "greet.toml").write_text('description = "Greet"\nprompt = """Say hello to {{args}}. [rig:custom]"""\n')
    steps = script(s.project)
    first = s.run(steps, FIRST)
    first_import = s.rematch("import", "--out", str(s.data), "-j", "1")
    later = s.run(steps, LATER)
    record = Record(first.runs + later.runs, first.requests + later.requests)
    res = s.rematch("import", "--out", str(s.data), "-j", "1")
    traces = [rig_compare.read_jsonl(p) for p in sorted((s.data / "traces").glob("*.jsonl"))]
    events = [rig_compare.read_jsonl(p) for p in sorted((s.data / "events").glob("*.jsonl"))]
    fresh_data = root / "fresh"
    assert s.rematch("import", "--out", str(fresh_data), "-j", "1").returncode == 0
    fresh = [rig_compare.read_jsonl(p) for p in sorted((fresh_data / "traces").glob("*.jsonl"))]
    return GeminiOutcome(s, steps, record, res.stdout, res.stderr, res.returncode, traces, events,
                         first_import.stdout + first_import.stderr, fresh)


def _log(outcome: GeminiOutcome, pattern: str = "*/chats/session-*.jsonl") -> list[dict[str, Any]]:
    """Every record of the logs ``pattern`` finds (the main session's by default: a resume in a new
    minute leaves a log of its start alone, which holds no prompt)."""
    paths = sorted(outcome.session.transcripts().glob(pattern))
    assert paths, pattern
    return [json.loads(line) for p in paths for line in p.read_text().splitlines() if line.strip()]


def _main(outcome: GeminiOutcome, traces: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    [main] = [t for t in traces if t[0]["agent"]["kind"] == "main"]
    return main


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
    assert "2 sessions imported" in gemini_outcome.import_out, gemini_outcome.import_out
    assert " 0 skipped, 0 failed" in gemini_outcome.import_out, gemini_outcome.import_out
    assert "(1 continued)" in gemini_outcome.import_out, gemini_outcome.import_out
    assert "1 sessions imported" in gemini_outcome.first_out and " 0 skipped" in gemini_outcome.first_out
    assert "skipped" not in gemini_outcome.import_err, gemini_outcome.import_err
    log = _log(gemini_outcome)
    call_ids = list(dict.fromkeys(tc["id"] for r in log for tc in r.get("toolCalls") or ()))
    prompts = list(dict.fromkeys(r["id"] for r in log if r.get("type") == "user" and any(
        "text" in p and not p["text"].startswith("<session_context>") for p in r.get("content") or ())))
    trace = _main(gemini_outcome, gemini_outcome.traces)
    results = [r for r in trace if r["ev"] == "tool_result"]
    assert [r["call_id"] for r in results] == call_ids
    assert [r["tool"] for r in results] == TOOLS
    assert all(isinstance(r["args_hash"], str) and len(r["args_hash"]) == 64 for r in results)
    assert [r["is_error"] for r in results] == [False, True, False, False, False, False, False]
    inputs = [r["text"] for r in trace if r["ev"] == "input"]
    assert len(inputs) == len(prompts) and inputs == INPUTS
    start = trace[0]
    assert start["cwd"] == str(gemini_outcome.session.project)
    assert start["model"] == {"provider": "google", "id": "gemini-2.5-flash"}
    usage = [r["usage"] for r in trace if r["ev"] == "turn_end"]
    answers = list(dict.fromkeys(r["id"] for r in log if r.get("type") == "gemini"))
    assert len(usage) == len(answers) and all(u["totalTokens"] > 0 for u in usage)


def test_subagent_is_its_own_session(gemini_outcome: GeminiOutcome) -> None:
    """The subagent's log (``chats/<parent id>/<id>.jsonl``) is a session of kind sub naming its parent,
    its calls as many as its log's."""
    main = _main(gemini_outcome, gemini_outcome.traces)
    [sub] = [t for t in gemini_outcome.traces if t[0]["agent"]["kind"] == "sub"]
    log = _log(gemini_outcome, "*/chats/*/*.jsonl")
    assert sub[0]["parent_session_id"] == main[0]["session_id"] if "parent_session_id" in sub[0] else True
    calls = list(dict.fromkeys(tc["id"] for r in log for tc in r.get("toolCalls") or ()))
    assert [r["call_id"] for r in sub if r["ev"] == "tool_result"] == calls
    assert [r["tool"] for r in sub if r["ev"] == "tool_result"] == ["run_shell_command", "complete_task"]
    assert [r["text"] for r in sub if r["ev"] == "input"] == ["Check it. [rig:inner]"]


def test_continued_trace_is_a_fresh_imports(gemini_outcome: GeminiOutcome) -> None:
    """The log imported after the first prompt and continued after the last gives the trace a fresh import gives."""
    assert gemini_outcome.traces == gemini_outcome.fresh


def test_security_stream_search_and_doctor(gemini_outcome: GeminiOutcome) -> None:
    """The event stream has each call; search finds a prompt; doctor names the plugin's folder."""
    events = [e for stream in gemini_outcome.events for e in stream]
    calls = [e for e in events if e.get("kind") == "pre_tool_use"]
    assert len(calls) == len(TOOLS) + 2, [e.get("kind") for e in events]
    assert {e.get("action_type") for e in calls} >= {"shell_exec", "file_write", "file_read", "file_edit"}
    s = gemini_outcome.session
    found = s.rematch("search", "Once more", "--data", str(s.data), "--json")
    assert found.returncode == 0 and "rig:again" in found.stdout, found.stdout + found.stderr
    doctor = s.rematch("doctor", "--data", str(s.data))
    assert f"looks in (gemini_cli): {s.transcripts()}\n" in doctor.stdout, doctor.stdout + doctor.stderr


def _show(s: GeminiCliSession, sid: str, *args: str) -> str:
    res = s.rematch("show", sid, "--data", str(s.data), *args)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def test_conversation_shows_each_output_and_nests_the_subagent(gemini_outcome: GeminiOutcome) -> None:
    """``rematch show --conversation`` (JSON, Markdown) of the real logs: the prompts, each call with its
    whole output (the failed ls an error), the answers; the ``invoke_agent`` call has the subagent's
    conversation nested (its ``agentId``), whose page links back to that call; ``search`` finds a phrase
    of the answers and one only in a shell output."""
    s = gemini_outcome.session
    main = _main(gemini_outcome, gemini_outcome.traces)
    [sub] = [t for t in gemini_outcome.traces if t[0]["agent"]["kind"] == "sub"]
    sid, sub_id = main[0]["session_id"], sub[0]["session_id"]
    conv = json.loads(_show(s, sid, "--conversation", "--format", "json"))
    assert conv["status"] == "ok" and conv["note"] == "", conv["note"]
    entries = conv["entries"]
    assert [e["text"] for e in entries if e["kind"] == "prompt"] == INPUTS
    calls = [e for e in entries if e["kind"] == "call"]
    assert [c["tool"] for c in calls] == TOOLS
    assert all(c["output"] and isinstance(c["seq"], int) for c in calls), calls
    assert calls[1]["is_error"] and "No such file or directory" in calls[1]["output"]
    assert [e["text"] for e in entries if e["kind"] == "assistant"] == ["Tools done.", "Again done.", "Sub done.",
                                                                        "Hello there."]
    invoke = calls[-1]
    assert invoke["subagent"]["session_id"] == sub_id and invoke["subagent"]["key"]
    nested = invoke["subagent"]["conversation"]["entries"]
    assert [e["tool"] for e in nested if e["kind"] == "call"] == ["run_shell_command", "complete_task"]
    assert "sub-ok" in next(e for e in nested if e["kind"] == "call")["output"]
    back = json.loads(_show(s, sub_id, "--conversation", "--format", "json"))
    assert back["parent"]["session_id"] == sid and back["parent"]["call_id"] == invoke["call_id"]
    md = _show(s, sid, "--format", "markdown")
    assert "## Tool `invoke_agent`" in md and "Process Group PGID" in md and "Sub done." in md
    for phrase, kind in (('"Again done"', "assistant"), ('"Process Group PGID"', "output")):
        res = s.rematch("search", phrase, "--data", str(s.data), "--json")
        assert res.returncode == 0, res.stderr
        hits = json.loads(res.stdout)
        assert hits and kind in {h["kind"] for h in hits} and {h["harness"] for h in hits} == {"gemini_cli"}, hits
