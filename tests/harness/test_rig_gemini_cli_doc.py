"""Gemini CLI at an older version (``gemini_cli_doc`` in versions.json, 0.30.0) that keeps a session as a
JSON document it rewrites whole: the import side, and its continuation by records.

Two prompts in one session, the second resumed: the tools of ``test_rig_gemini_cli.py`` (a shell
command that succeeds and one that fails, write, read, edit), then the shell again (0.30.0 takes
about three times as long as 0.61.0 to start and stop: the custom command and the subagent are
left to the newer version's test).
``rematch import`` runs after the first prompt and after the last. Checked: every run exits 0 and
asked for every step; the harness wrote one ``session-*.json`` document; both imports have no skipped
record; the second continues the document (its old records are its new ones' first records, though
its bytes all moved) and equals a fresh import; prompts and calls are as many as the document's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import rig_compare
from rig_session import GeminiCliSession, Prompt, Record
from test_rig_gemini_cli import script

FIRST = [Prompt("Use the tools. [rig:tools]")]
LATER = [Prompt("Once more. [rig:again]", resume=True)]


@dataclass
class DocOutcome:
    """The record, both imports' output, the traces and a fresh import's."""

    session: GeminiCliSession
    steps: dict[str, Any]
    record: Record
    first_out: str
    last_out: str
    traces: list[list[dict[str, Any]]]
    fresh: list[list[dict[str, Any]]]


@pytest.fixture(scope="module")
def doc_outcome(gemini_cli_doc_exe: Path, tmp_path_factory: pytest.TempPathFactory) -> DocOutcome:
    """The two prompts, an import after each, and a fresh import."""
    root = tmp_path_factory.mktemp("gemini-doc-rig")
    s = GeminiCliSession(root, gemini_cli_doc_exe)
    s.install_hooks()
    steps = {k: v for k, v in script(s.project).items() if k in ("tools", "again")}
    first = s.run(steps, FIRST)
    one = s.rematch("import", "--out", str(s.data), "-j", "1")
    later = s.run(steps, LATER)
    last = s.rematch("import", "--out", str(s.data), "-j", "1")
    traces = [rig_compare.read_jsonl(p) for p in sorted((s.data / "traces").glob("*.jsonl"))]
    fresh_data = root / "fresh"
    assert s.rematch("import", "--out", str(fresh_data), "-j", "1").returncode == 0
    fresh = [rig_compare.read_jsonl(p) for p in sorted((fresh_data / "traces").glob("*.jsonl"))]
    return DocOutcome(s, steps, Record(first.runs + later.runs, first.requests + later.requests),
                      one.stdout + one.stderr, last.stdout + last.stderr, traces, fresh)


def test_every_run_ends_cleanly(doc_outcome: DocOutcome) -> None:
    """Each gemini process exits 0 and asked for every scripted step."""
    for run in doc_outcome.record.runs:
        assert not run["timed_out"] and run["rc"] == 0, run["stderr"][-2000:]
    steps = {(r["scenario"], r["step"]) for r in doc_outcome.record.requests}
    for name, steps_of in doc_outcome.steps.items():
        assert {(name, i) for i in range(len(steps_of))} <= steps, name


def test_document_imports_and_continues_by_records(doc_outcome: DocOutcome) -> None:
    """One document; no skipped record either time; the second import continues it and equals a fresh one;
    the prompts and calls are the document's."""
    [doc_path] = sorted(doc_outcome.session.transcripts().glob("*/chats/session-*.json"))
    assert not list(doc_outcome.session.transcripts().glob("*/chats/*.jsonl"))
    doc = json.loads(doc_path.read_text())
    assert "1 sessions imported" in doc_outcome.first_out and " 0 skipped, 0 failed" in doc_outcome.first_out
    assert "(1 continued)" in doc_outcome.last_out and " 0 skipped, 0 failed" in doc_outcome.last_out, \
        doc_outcome.last_out
    assert doc_outcome.traces == doc_outcome.fresh
    [trace] = doc_outcome.traces
    calls = [tc["id"] for m in doc["messages"] for tc in m.get("toolCalls") or ()]
    assert [r["call_id"] for r in trace if r["ev"] == "tool_result"] == calls and len(calls) == 6
    assert [r["is_error"] for r in trace if r["ev"] == "tool_result"] == [False, True, False, False, False, False]
    prompts = [m for m in doc["messages"] if m["type"] == "user"]
    assert [r["text"] for r in trace if r["ev"] == "input"] == ["Use the tools. [rig:tools]", "Once more. [rig:again]"]
    assert len(prompts) == 2
    assert trace[0]["cwd"] == str(doc_outcome.session.project)


def test_document_shows_its_conversation_and_is_searched(doc_outcome: DocOutcome) -> None:
    """``rematch show --conversation`` of the 0.30.0 document: its prompts, its answers and each call with
    its whole output (the failed ls an error); ``search`` finds an answer and a phrase only in an output."""
    s = doc_outcome.session
    [trace] = doc_outcome.traces
    sid = trace[0]["session_id"]
    res = s.rematch("show", sid, "--data", str(s.data), "--conversation", "--format", "json")
    assert res.returncode == 0, res.stdout + res.stderr
    conv = json.loads(res.stdout)
    assert conv["status"] == "ok" and conv["note"] == "", conv["note"]
    entries = conv["entries"]
    assert [e["text"] for e in entries if e["kind"] == "prompt"] == ["Use the tools. [rig:tools]",
                                                                     "Once more. [rig:again]"]
    assert [e["text"] for e in entries if e["kind"] == "assistant"] == ["Tools done.", "Again done."]
    calls = [e for e in entries if e["kind"] == "call"]
    assert [c["call_id"] for c in calls] == [r["call_id"] for r in trace if r["ev"] == "tool_result"]
    assert all(c["output"] for c in calls) and calls[1]["is_error"]
    assert "alpha\ngamma" in calls[-1]["output"]
    for phrase, kind in (('"Again done"', "assistant"), ('"Process Group PGID"', "output")):
        found = s.rematch("search", phrase, "--data", str(s.data), "--json")
        assert found.returncode == 0, found.stderr
        hits = json.loads(found.stdout)
        assert hits and kind in {h["kind"] for h in hits}, (phrase, hits)
