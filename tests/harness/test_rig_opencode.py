"""opencode, as it ships (the pinned version), with a custom provider speaking Chat Completions: the import side.

One session of two prompts, the second continued (``--continue``): bash that succeeds and one that
fails, write, read, edit, and a subagent (``task``) that runs bash itself; then bash again. opencode
keeps them in its SQLite database. Checked: every run exits 0 and asked for every step; the data
folder imports with exit 0 and no skipped record; each session's trace holds, by count, what the
database holds (its user messages as inputs, its finished tool parts as tool results, its
assistant steps as turn ends); the subagent's trace names its parent; a second import finds the
database unchanged, and a third prompt later is continued, not read whole.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import rig_compare
from rig_session import OpencodeSession, Prompt, Record

SUB = "Count the files. [rig:sub]"
SCRIPT: dict[str, Any] = {
    "tools": [
        {"tool": "bash", "input": {"command": "echo rig-ok", "description": "say ok"}},
        {"tool": "bash", "input": {"command": "ls /nonexistent-rig-dir", "description": "list nothing"}},
        {"tool": "write", "input": {"filePath": "{project}/notes.txt", "content": "alpha\nbeta\n"}},
        {"tool": "read", "input": {"filePath": "{project}/notes.txt"}},
        {"tool": "edit", "input": {"filePath": "{project}/notes.txt", "oldString": "beta", "newString": "gamma"}},
        {"tool": "task", "input": {"description": "count files", "prompt": SUB, "subagent_type": "general"}},
        {"text": "Tools done."},
    ],
    "sub": [
        {"tool": "bash", "input": {"command": "ls | wc -l", "description": "count"}},
        {"text": "Two files."},
    ],
    "again": [
        {"tool": "bash", "input": {"command": "cat notes.txt", "description": "show notes"}},
        {"text": "Again done."},
    ],
    "later": [{"text": "Later done."}],
}
PROMPTS = [Prompt("Use the tools. [rig:tools]"), Prompt("Once more. [rig:again]", resume=True)]


def _script(project: Path) -> dict[str, Any]:
    return json.loads(json.dumps(SCRIPT).replace("{project}", str(project)))


@dataclass
class OpencodeOutcome:
    """The session's record, the import's result and its traces."""

    session: OpencodeSession
    record: Record
    imported: Path
    import_out: str
    import_err: str
    import_rc: int
    traces: dict[str, list[dict[str, Any]]]


def _import(s: OpencodeSession, out: Path) -> tuple[int, str, str]:
    res = s.rematch("import", str(s.transcripts()), "--out", str(out), "-j", "1")
    return res.returncode, res.stdout, res.stderr


def _traces(out: Path) -> dict[str, list[dict[str, Any]]]:
    return {p.stem: rig_compare.read_jsonl(p) for p in sorted((out / "traces").glob("*.jsonl"))}


@pytest.fixture(scope="module")
def oc(opencode_exe: Path, tmp_path_factory: pytest.TempPathFactory) -> OpencodeOutcome:
    """The two prompts run once; the data folder imported."""
    root = tmp_path_factory.mktemp("opencode-rig")
    s = OpencodeSession(root, opencode_exe)
    s.install_hooks()
    record = s.run(_script(s.project), PROMPTS)
    imported = root / "imported"
    rc, out, err = _import(s, imported)
    return OpencodeOutcome(s, record, imported, out, err, rc, _traces(imported))


def _db(oc: OpencodeOutcome) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{oc.session.transcripts() / 'opencode.db'}?mode=ro", uri=True)


def test_every_run_ends_cleanly(oc: OpencodeOutcome) -> None:
    """Each opencode process exits 0 in time and asked for every scripted step."""
    for run in oc.record.runs:
        assert not run["timed_out"] and run["rc"] == 0, run["stderr"][-2000:]
    steps = {(r["scenario"], r["step"]) for r in oc.record.requests}
    for name in ("tools", "sub", "again"):
        assert {(name, i) for i in range(len(SCRIPT[name]))} <= steps, name
    assert (oc.session.project / "notes.txt").read_text() == "alpha\ngamma\n"


def test_the_model_gets_each_calls_output(oc: OpencodeOutcome) -> None:
    """The request after the first bash carries its output as a ``tool`` message with its call id;
    the failed ls's output reaches the model too."""
    after = oc.record.messages("tools")
    tool_msgs = [m for body in after for m in body["messages"] if m.get("role") == "tool"]
    assert any("rig-ok" in json.dumps(m.get("content")) for m in tool_msgs), tool_msgs[:3]
    assert any("nonexistent-rig-dir" in json.dumps(m.get("content")) for m in tool_msgs)
    assert all(isinstance(m.get("tool_call_id"), str) for m in tool_msgs)


def test_transcript_imports_with_no_skipped_line(oc: OpencodeOutcome) -> None:
    """``rematch import`` of the data folder: exit 0, nothing skipped or failed."""
    assert oc.import_rc == 0, oc.import_out + oc.import_err
    assert " 0 skipped, 0 failed" in oc.import_out, oc.import_out
    assert "skipped" not in oc.import_err, oc.import_err


def test_transcript_imports_with_no_skipped_line_by_count(oc: OpencodeOutcome) -> None:
    """Per session, by count: user messages = inputs, finished tool parts = tool results (same call
    ids), assistant steps = turn ends; every session of the database has its trace."""
    con = _db(oc)
    sessions = [r[0] for r in con.execute("SELECT id FROM session")]
    assert sorted(sessions) == sorted(oc.traces), (sessions, list(oc.traces))
    assert len(sessions) == 2
    for sid in sessions:
        trace = oc.traces[sid]
        users = con.execute("SELECT count(*) FROM message WHERE session_id = ? AND json_extract(data, '$.role') = 'user'",
                            (sid,)).fetchone()[0]
        calls = [r[0] for r in con.execute(
            "SELECT json_extract(data, '$.callID') FROM part WHERE session_id = ? AND json_extract(data, '$.type') = 'tool' "
            "AND json_extract(data, '$.state.status') IN ('completed', 'error') ORDER BY id", (sid,))]
        steps = con.execute("SELECT count(*) FROM part WHERE session_id = ? AND json_extract(data, '$.type') = 'step-finish'",
                            (sid,)).fetchone()[0]
        assert sum(r["ev"] == "input" for r in trace) == users, sid
        assert [r["call_id"] for r in trace if r["ev"] == "tool_result"] == calls, sid
        assert sum(r["ev"] == "turn_end" for r in trace) == steps, sid


def test_transcript_imports_with_no_skipped_line_tools_and_subagent(oc: OpencodeOutcome) -> None:
    """The main session's calls in order with the failed ls an error; the subagent's bash in its own
    trace, which names the main session as its parent."""
    [main] = [t for t in oc.traces.values() if t[0]["agent"]["kind"] == "main"]
    [sub] = [t for t in oc.traces.values() if t[0]["agent"]["kind"] == "sub"]
    results = [r for r in main if r["ev"] == "tool_result"]
    assert [r["tool"] for r in results] == ["bash", "bash", "write", "read", "edit", "task", "bash"]
    assert [r["is_error"] for r in results] == [False, True, False, False, False, False, False]
    assert results[1]["error_class"] == "exit_nonzero"
    assert all(isinstance(r["args_hash"], str) and len(r["args_hash"]) == 64 for r in results)
    assert [r["tool"] for r in sub if r["ev"] == "tool_result"] == ["bash"]
    # The trace's session_start has no parent field: the sub session's security events name it.
    sub_events = rig_compare.read_jsonl(oc.imported / "events" / f"{sub[0]['session_id']}.jsonl")
    assert sub_events and {e.get("source_session_id") for e in sub_events} == {main[0]["session_id"]}
    inputs = [r["text"] for r in main if r["ev"] == "input"]
    assert len(inputs) == 2 and "[rig:tools]" in inputs[0] and "[rig:again]" in inputs[1]
    usage = [r["usage"] for r in main if r["ev"] == "turn_end"]
    assert all(u["input"] > 0 and u["output"] > 0 for u in usage)


def test_transcript_imports_with_no_skipped_line_events(oc: OpencodeOutcome) -> None:
    """The security stream covers opencode's calls: shell and file actions typed by the plugin."""
    events = [e for p in (oc.imported / "events").glob("*.jsonl") for e in rig_compare.read_jsonl(p)]
    kinds = {e.get("action_type") for e in events if e.get("action_type")}
    assert {"shell_exec", "file_write", "file_edit", "file_read", "subagent"} <= kinds, kinds


def test_transcript_imports_with_no_skipped_line_then_continues(oc: OpencodeOutcome, tmp_path: Path) -> None:
    """A second import finds the database unchanged (or continues it with nothing new); a third prompt
    later continues it (no full read) and the main trace gains just that prompt's input and turn."""
    rc, out, _ = _import(oc.session, oc.imported)
    # Unchanged, or (the database written within 2 s of the first import: a change is assumed)
    # continued with nothing new: never read whole, and the traces stay as they were.
    assert rc == 0 and ("1 unchanged" in out or "(1 continued)" in out), out
    assert _traces(oc.imported) == oc.traces
    old_main = next(t for t in oc.traces.values() if t[0]["agent"]["kind"] == "main")
    oc.session.run(_script(oc.session.project), [Prompt("Later. [rig:later]", resume=True)])
    rc, out, err = _import(oc.session, oc.imported)
    assert rc == 0 and "(1 continued)" in out, out + err
    traces = _traces(oc.imported)
    main = traces[old_main[0]["session_id"]]
    evs = [r["ev"] for r in main]
    assert evs.count("input") == 3 and "[rig:later]" in [r for r in main if r["ev"] == "input"][-1]["text"]
    assert evs.count("turn_end") == [r["ev"] for r in old_main].count("turn_end") + 1
    assert main[-1]["ev"] == "session_shutdown" and [r["seq"] for r in main] == list(range(len(main)))


def test_conversation_shows_each_output_and_nests_the_task_subagent(oc: OpencodeOutcome) -> None:
    """``rematch show --conversation`` (JSON, Markdown) of the real database: the prompts, each call with
    its whole output (the failed ls an error), the answers; the ``task`` call has the subagent's
    conversation nested (its ``metadata.sessionId``), whose page links back to that call; ``search``
    finds a phrase of an answer and one only in a tool output."""
    [main] = [t for t in oc.traces.values() if t[0]["agent"]["kind"] == "main"]
    [sub] = [t for t in oc.traces.values() if t[0]["agent"]["kind"] == "sub"]
    sid, sub_id = main[0]["session_id"], sub[0]["session_id"]

    def show(of: str, *args: str) -> str:
        res = oc.session.rematch("show", of, "--data", str(oc.imported), *args)
        assert res.returncode == 0, res.stdout + res.stderr
        return res.stdout

    conv = json.loads(show(sid, "--conversation", "--format", "json"))
    assert conv["status"] == "ok" and conv["note"] == "", conv["note"]
    entries = conv["entries"]
    calls = [e for e in entries if e["kind"] == "call"]
    assert [c["tool"] for c in calls][:7] == ["bash", "bash", "write", "read", "edit", "task", "bash"]
    assert all(c["output"] is not None and isinstance(c["seq"], int) for c in calls), calls
    assert calls[0]["output"] == "rig-ok\n" and not calls[0]["is_error"]
    assert calls[1]["is_error"] and "No such file or directory" in calls[1]["output"]
    said = [e["text"] for e in entries if e["kind"] == "assistant"]
    assert said[:2] == ["Tools done.", "Again done."]
    task = calls[5]
    assert task["subagent"]["session_id"] == sub_id and task["subagent"]["key"]
    nested = task["subagent"]["conversation"]["entries"]
    assert [e["kind"] for e in nested] == ["prompt", "call", "assistant"]
    assert nested[0]["text"] == SUB and nested[1]["input"]["command"] == "ls | wc -l" and nested[1]["output"]
    back = json.loads(show(sub_id, "--conversation", "--format", "json"))
    assert back["parent"]["session_id"] == sid and back["parent"]["call_id"] == task["call_id"]
    md = show(sid, "--format", "markdown")
    assert "## Tool `task`" in md and "cannot access" in md and "Again done." in md
    for phrase, kind in (('"Again done"', "assistant"), ('"cannot access"', "output")):
        res = oc.session.rematch("search", phrase, "--data", str(oc.imported), "--json")
        assert res.returncode == 0, res.stderr
        hits = json.loads(res.stdout)
        assert hits and kind in {h["kind"] for h in hits} and {h["harness"] for h in hits} == {"opencode"}, hits
