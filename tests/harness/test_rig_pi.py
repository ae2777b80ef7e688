"""pi, as it ships (the pinned version), with a custom provider speaking Anthropic Messages: the import side.

No extension here (live, deny and hold with rematch's extension: ``test_rig_pi_live.py``). One session of
two prompts, the second continued (``--continue``): bash that succeeds and one that fails, write,
read, edit; then bash again. Checked: every run exits 0 and asked for every step, the model got
each result, and the session imports with exit 0, no skipped line, each call a tool result with
its tool and args_hash.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import rig_compare
from rig_session import PiSession, Prompt, Record

SCRIPT: dict[str, Any] = {
    "tools": [
        {"tool": "bash", "input": {"command": "echo rig-ok"}},
        {"tool": "bash", "input": {"command": "ls /nonexistent-rig-dir"}},
        {"tool": "write", "input": {"path": "notes.txt", "content": "alpha\nbeta\n"}},
        {"tool": "read", "input": {"path": "notes.txt"}},
        {"tool": "edit", "input": {"path": "notes.txt", "edits": [{"oldText": "beta", "newText": "gamma"}]}},
        {"text": "Tools done."},
    ],
    "again": [
        {"tool": "bash", "input": {"command": "cat notes.txt"}},
        {"text": "Again done."},
    ],
}
PROMPTS = [Prompt("Use the tools. [rig:tools]"), Prompt("Once more. [rig:again]", resume=True)]


@dataclass
class PiOutcome:
    """The session's record, the import's result and its traces."""

    session: PiSession
    record: Record
    import_out: str
    import_err: str
    import_rc: int
    traces: list[list[dict[str, Any]]]


@pytest.fixture(scope="module")
def pi_outcome(pi_exe: Path, tmp_path_factory: pytest.TempPathFactory) -> PiOutcome:
    """The two prompts run once; the sessions imported."""
    return run_import(PiSession(tmp_path_factory.mktemp("pi-rig"), pi_exe))


def run_import(s: PiSession, script: dict[str, Any] = SCRIPT) -> PiOutcome:
    """The two prompts of ``s`` (pi's or omp's, ``test_rig_omp.py``) run once; the sessions imported."""
    root = s.root
    s.install_hooks()
    record = s.run(script, PROMPTS)
    imported = root / "imported"
    res = s.rematch("import", str(s.transcripts()), "--out", str(imported), "-j", "1")
    traces = [rig_compare.read_jsonl(p) for p in sorted((imported / "traces").glob("*.jsonl"))]
    return PiOutcome(s, record, res.stdout, res.stderr, res.returncode, traces)


def test_every_run_ends_cleanly(pi_outcome: PiOutcome) -> None:
    """Each pi process exits 0 in time and asked for every scripted step."""
    for run in pi_outcome.record.runs:
        assert not run["timed_out"] and run["rc"] == 0, run["stderr"][-2000:]
    steps = {(r["scenario"], r["step"]) for r in pi_outcome.record.requests}
    for name, script in SCRIPT.items():
        assert {(name, i) for i in range(len(script))} <= steps, name


def test_the_model_gets_each_calls_output(pi_outcome: PiOutcome) -> None:
    """The request after the edit carries its tool_result; the file was changed."""
    after = pi_outcome.record.messages("tools")[5]
    [result] = [b for b in after["messages"][-1]["content"] if b.get("type") == "tool_result"]
    assert not result.get("is_error"), result
    assert (pi_outcome.session.project / "notes.txt").read_text() == "alpha\ngamma\n"
    assert "gamma" in json.dumps(pi_outcome.record.messages("again")[1]["messages"][-1])


def test_transcript_imports_with_no_skipped_line(pi_outcome: PiOutcome) -> None:
    """``rematch import`` of pi's sessions folder: exit 0, nothing skipped; each call a tool result."""
    assert pi_outcome.import_rc == 0, pi_outcome.import_out + pi_outcome.import_err
    assert " 0 skipped, 0 failed" in pi_outcome.import_out, pi_outcome.import_out
    assert "skipped" not in pi_outcome.import_err, pi_outcome.import_err
    results = [r for t in pi_outcome.traces for r in t if r["ev"] == "tool_result"]
    assert [r["tool"] for r in results] == ["bash", "bash", "write", "read", "edit", "bash"]
    assert all(isinstance(r["args_hash"], str) and len(r["args_hash"]) == 64 for r in results)
    assert [r["is_error"] for r in results] == [False, True, False, False, False, False]
    inputs = [r["text"] for t in pi_outcome.traces for r in t if r["ev"] == "input"]
    assert inputs == ["Use the tools. [rig:tools]", "Once more. [rig:again]"]


def test_the_session_is_the_harness_that_wrote_it(pi_outcome: PiOutcome) -> None:
    """Named by path (the rig's agent folder is neither ``~/.pi`` nor ``~/.omp``), pi's file is harness
    ``pi`` and omp's (``test_rig_omp.py``) ``omp``: in the trace and in ``rematch sessions``."""
    harness = pi_outcome.session.harness
    assert [t[0]["agent"]["name"] for t in pi_outcome.traces] == [harness]
    res = pi_outcome.session.rematch("sessions", "--data", str(pi_outcome.session.root / "imported"), "--json")
    assert [s["harness"] for s in json.loads(res.stdout)] == [harness], res.stdout + res.stderr
