"""The Gemini CLI plugin through the public contract and the real ``rematch`` CLI.

Fixtures (``fixtures/``): a 0.61 JSON-lines log (one prompt, five tool calls, one of them a
failing shell command) cut from a session the real harness wrote in the rig, and a
document as older versions write it. Checked: the contract test kit passes; the CLI
imports both with no skipped record, counts matching the source; a log cut after a
model message held open is continued when the harness restates it; a document is
continued when its old records are its new ones' first records, and imported whole
when an old record changed; a ``.json`` no plugin claims is passed over in silence.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import rematch_gemini_cli
from rematch_gemini_cli import discover
from rematch_trace.testing import check_plugin

FIXTURES = Path(__file__).parent / "fixtures"
LOG = FIXTURES / "session-2026-12-01T18-35-c0445b57.jsonl"
DOC = FIXTURES / "session-2025-06-30T10-02-5f0c2a7e.json"
REMATCH = [sys.executable, "-c", "import sys; from rematch_trace.cli import main; sys.argv[0] = 'rematch'; main()"]
TOOLS = ["run_shell_command", "run_shell_command", "write_file", "read_file", "replace"]


def rematch(*args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI, with only this checkout's plugins' environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMATCH_")}
    return subprocess.run([*REMATCH, *args], capture_output=True, text=True, timeout=120, env=env)


def traces(out: Path) -> list[list[dict[str, Any]]]:
    """Every trace of a data folder, as records."""
    return [[json.loads(line) for line in p.read_text().splitlines()] for p in sorted((out / "traces").glob("*.jsonl"))]


def of(trace: list[dict[str, Any]], ev: str) -> list[dict[str, Any]]:
    """The records of one kind."""
    return [r for r in trace if r["ev"] == ev]


def test_contract_kit_passes_for_both_shapes(tmp_path: Path) -> None:
    """check_plugin: every record valid, one session per file, the source's calls each a result."""
    sessions = check_plugin(rematch_gemini_cli, [str(LOG), str(DOC)], out=tmp_path)
    assert len(sessions) == 2
    for s in sessions:
        assert [r["tool"] for r in s.records if r["ev"] == "tool_result"] == TOOLS
        assert [r["is_error"] for r in s.records if r["ev"] == "tool_result"] == [False, True, False, False, False]
        assert [r["text"] for r in s.records if r["ev"] == "input"] == ["Use the tools. [rig:tools]"]
        assert s.events, "the security stream has events"


def test_detect_claims_only_session_files(tmp_path: Path) -> None:
    """A session's log and document are claimed (the document as rewritten); logs.json and a foreign log are not."""
    log = discover.detect(LOG, LOG.read_bytes()[:4096], None)
    doc = discover.detect(DOC, DOC.read_bytes()[:4096], None)
    assert log is not None and not log.rewritten and log.agent_kind == "main"
    assert doc is not None and doc.rewritten
    logs = b'[\n  {\n    "sessionId": "x",\n    "messageId": 0,\n    "type": "user",\n    "message": "hi"\n  }\n]'
    assert discover.detect(tmp_path / "logs.json", logs, None) is None
    assert discover.detect(tmp_path / "a.jsonl", b'{"type":"session","id":"x"}\n', None) is None
    sub = tmp_path / "chats" / "parent-id" / "child.jsonl"
    src = discover.detect(sub, b'{"sessionId":"c","projectHash":"ab","kind":"subagent"}\n', None)
    assert src is not None and src.agent_kind == "sub"
    long_first = b'{"sessionId":"c","projectHash":"ab","kind":"subagent","directories":["' + b"d" * 5000
    src = discover.detect(tmp_path / "chats" / "p" / "c.jsonl", long_first[:4096], None)
    assert src is not None and src.agent_kind == "sub"


def test_cli_imports_fixtures_counted_against_source(tmp_path: Path) -> None:
    """``rematch import`` of the folder: nothing skipped; prompts and calls as many as the source's."""
    folder = tmp_path / "chats"
    shutil.copytree(FIXTURES, folder)
    (folder / "logs.json").write_text('[{"sessionId": "x", "messageId": 0, "type": "user", "message": "hi"}]')
    res = rematch("import", str(folder), "--out", str(tmp_path / "out"), "-j", "1")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "2 sessions imported from 2 files" in res.stdout and " 0 skipped, 0 failed" in res.stdout, res.stdout
    source_calls = {tc["id"] for line in LOG.read_text().splitlines() for tc in json.loads(line).get("toolCalls", [])}
    for trace in traces(tmp_path / "out"):
        assert len(of(trace, "tool_result")) == len(source_calls)
        assert {r["call_id"] for r in of(trace, "tool_result")} == source_calls
        assert len(of(trace, "input")) == 1


def _rewrite(doc: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(doc, indent=2) + "\n")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))  # a later write, past the racy window


def test_document_continued_by_records_and_reimported_when_changed(tmp_path: Path) -> None:
    """A rewritten document whose old records come first is continued (its metadata's time and the model
    message still open at the first import may change); one whose old record changed is read whole."""
    doc = json.loads(DOC.read_text())
    full = list(doc["messages"])
    path = tmp_path / DOC.name
    # Mid-turn: the second model message written before its tool call was added to it in place.
    doc["messages"] = [*full[:2], {k: v for k, v in full[2].items() if k not in ("toolCalls", "tokens")}]
    _rewrite(doc, path)
    out = tmp_path / "out"
    assert rematch("import", str(path), "--out", str(out), "-j", "1").returncode == 0
    [first] = traces(out)
    assert [r["tool"] for r in of(first, "tool_result")] == TOOLS[:1]
    doc["messages"] = full
    doc["lastUpdated"], doc["summary"] = "2026-12-01T18:36:00.000Z", "Tools"  # the metadata is rewritten too
    _rewrite(doc, path)
    res = rematch("import", str(path), "--out", str(out), "-j", "1")
    assert res.returncode == 0 and "(1 continued)" in res.stdout, res.stdout + res.stderr
    [trace] = traces(out)
    assert [r["tool"] for r in of(trace, "tool_result")] == TOOLS
    assert [r["seq"] for r in trace] == list(range(len(trace)))
    # The same records as a fresh import of the whole document.
    fresh = tmp_path / "fresh"
    assert rematch("import", str(path), "--out", str(fresh), "-j", "1").returncode == 0
    [whole] = traces(fresh)
    assert [(r["ev"], r.get("call_id")) for r in trace] == [(r["ev"], r.get("call_id")) for r in whole]
    # An old record changed (the prompt edited): not a continuation.
    doc["messages"][0] = {**doc["messages"][0], "content": "Edited prompt."}
    doc["messages"].append({"id": "m-new", "timestamp": "2026-12-01T18:40:00.000Z", "type": "user", "content": "More."})
    _rewrite(doc, path)
    res = rematch("import", str(path), "--out", str(out), "-j", "1")
    assert res.returncode == 0 and "(0 continued)" in res.stdout, res.stdout + res.stderr
    [trace] = traces(out)
    assert [r["text"] for r in of(trace, "input")] == ["Edited prompt.", "More."]


def test_log_continued_past_a_held_model_message(tmp_path: Path) -> None:
    """A log cut right after a model message (no tool calls yet) continues when the harness restates it."""
    lines = LOG.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if '"type":"gemini"' in line) + 1
    path = tmp_path / LOG.name
    path.write_text("".join(lines[:cut]))
    out = tmp_path / "out"
    assert rematch("import", str(path), "--out", str(out), "-j", "1").returncode == 0
    [first] = traces(out)
    assert of(first, "tool_result") == [] and len(of(first, "turn_end")) == 1
    path.write_text("".join(lines))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    res = rematch("import", str(path), "--out", str(out), "-j", "1")
    assert res.returncode == 0 and "(1 continued)" in res.stdout, res.stdout + res.stderr
    [trace] = traces(out)
    assert [r["tool"] for r in of(trace, "tool_result")] == TOOLS
    assert len(of(trace, "turn_end")) == 6


def test_long_document_continued_though_its_first_bytes_change(tmp_path: Path) -> None:
    """A document of 300 records whose ``lastUpdated`` (in its first bytes) is rewritten is still continued:
    the core compares none of a rewritten source's bytes (compared as a log, its head differs: read whole)."""
    doc: dict[str, Any] = {"sessionId": "long-doc", "projectHash": "00", "startTime": "2025-06-30T10:00:00.000Z",
                           "lastUpdated": "2025-06-30T10:00:00.000Z", "messages": []}

    def prompts(n: int) -> list[dict[str, Any]]:
        return [{"id": f"u{i}", "timestamp": "2025-06-30T10:00:01.000Z", "type": "user", "content": f"prompt {i}"}
                for i in range(n)]

    path = tmp_path / "session-2025-06-30T10-00-longdoc0.json"
    doc["messages"] = prompts(300)
    _rewrite(doc, path)
    out = tmp_path / "out"
    assert rematch("import", str(path), "--out", str(out), "-j", "1").returncode == 0
    doc["messages"], doc["lastUpdated"] = prompts(302), "2025-06-30T11:00:00.000Z"
    _rewrite(doc, path)
    res = rematch("import", str(path), "--out", str(out), "-j", "1")
    assert res.returncode == 0 and "(1 continued)" in res.stdout, res.stdout + res.stderr
    [trace] = traces(out)
    assert [r["text"] for r in of(trace, "input")] == [f"prompt {i}" for i in range(302)]


def test_hostile_log_types_are_checked(tmp_path: Path) -> None:
    """Fields of the wrong type (a log is the agent's to write) cost nothing but themselves: no crash,
    the well-formed parts still translate, and the contract kit passes."""
    lines: list[Any] = [
        {"sessionId": "hostile", "projectHash": "ab", "startTime": 5, "kind": ["subagent"], "directories": [7]},
        {"$set": {"messages": "nope"}},
        {"$set": {"messages": [1, {"id": 2}, {"id": "m0", "type": "user", "content": "Typed. [x]"}]}},
        {"$rewindTo": 5},
        [1, 2],
        "text",
        {"id": "m1", "type": "gemini", "toolCalls": 5, "tokens": {"input": -4, "output": True, "total": "9"},
         "content": 42, "timestamp": "not a time", "model": ["x"]},
        {"id": "m2", "type": "gemini", "toolCalls": [{"id": 3}, "x", {"id": "c1", "name": 7, "args": "str",
                                                                  "status": "success", "result": "notalist"}]},
        {"id": "m3", "type": "user", "content": 42},
        {"id": "m4", "type": "user", "content": [{"functionResponse": {"id": "c9", "name": "ghost", "response": [1]}},
                                                   {"functionResponse": "x"}, {"text": None}]},
        {"id": "m5", "type": ["gemini"], "content": "?"},
        {"id": "m6", "type": "gemini", "content": "End.", "toolCalls": [{"id": "c2", "name": "run_shell_command",
                                                                         "args": {"command": "true"},
                                                                         "status": "error", "result": [
                                                                             {"functionResponse": {"response": {"error": 1}}}]}]},
    ]
    path = tmp_path / "session-hostile.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    [s] = check_plugin(rematch_gemini_cli, [str(path)], out=tmp_path / "out")
    assert [r["text"] for r in s.records if r["ev"] == "input"] == ["Typed. [x]"]
    results = [(r["call_id"], r["tool"], r["is_error"]) for r in s.records if r["ev"] == "tool_result"]
    assert results == [("c1", "", False), ("c9", "ghost", False), ("c2", "run_shell_command", True)], results
    assert s.records[0]["agent"]["kind"] == "main" and s.records[0]["cwd"] == ""


def test_log_continued_past_a_resume_that_restates_the_held_message(tmp_path: Path) -> None:
    """A resume restates the history in a ``$set`` of messages; cut just after it (the last answer held as
    restated there), the log is still continued when the next prompt comes, and equals a fresh import."""
    lines = LOG.read_text().splitlines(keepends=True)
    records = [json.loads(line) for line in lines]
    history: dict[str, Any] = {}
    for r in records:
        if isinstance(r.get("id"), str):
            history[r["id"]] = r
    resume = [json.dumps(records[0]) + "\n", json.dumps({"$set": {"messages": list(history.values())}}) + "\n"]
    later = [json.dumps({"id": "u-next", "timestamp": "2026-12-01T18:40:00.000Z", "type": "user",
                         "content": [{"text": "Next."}]}) + "\n",
             json.dumps({"id": "g-next", "timestamp": "2026-12-01T18:40:01.000Z", "type": "gemini",
                         "content": "Done.", "tokens": {"input": 9, "output": 2, "total": 11},
                         "model": "gemini-2.5-flash"}) + "\n"]
    path = tmp_path / LOG.name
    path.write_text("".join(lines + resume))
    out = tmp_path / "out"
    assert rematch("import", str(path), "--out", str(out), "-j", "1").returncode == 0
    path.write_text("".join(lines + resume + later))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    res = rematch("import", str(path), "--out", str(out), "-j", "1")
    assert res.returncode == 0 and "(1 continued)" in res.stdout, res.stdout + res.stderr
    fresh = tmp_path / "fresh"
    assert rematch("import", str(path), "--out", str(fresh), "-j", "1").returncode == 0
    assert traces(out) == traces(fresh)
    [trace] = traces(out)
    assert [r["text"] for r in of(trace, "input")] == ["Use the tools. [rig:tools]", "Next."]
    assert len(of(trace, "turn_end")) == 7
