"""Codex, as it ships (the pinned version), driven by a scripted Responses server: the import side.

rematch has no live capture for Codex yet (no ``live_records`` in the Codex plugin, no
``hooks.json`` install), so the live, deny and hold scenarios are not run for it
(docs/compatibility.md). One session of two prompts, the second resumed (``codex exec resume
--last``): a shell call that succeeds, one that fails, a file written by the shell; then a second
shell call. Checked: every run exits 0 and asked for every scripted step, the model got each
call's output, and the transcripts import with exit 0, no skipped line, and the calls as tool
results with their tool and args_hash.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import rig_compare
from rig_session import CodexSession, Prompt, Record

SCRIPT: dict[str, Any] = {
    "shell": [
        {"tool": "exec_command", "input": {"cmd": "echo rig-ok"}},
        {"tool": "exec_command", "input": {"cmd": "ls /nonexistent-rig-dir"}},
        {"tool": "exec_command", "input": {"cmd": "printf 'alpha\\n' > notes.txt && cat notes.txt"}},
        {"text": "Shell done."},
    ],
    "again": [
        {"tool": "exec_command", "input": {"cmd": "echo second-prompt"}},
        {"text": "Again done."},
    ],
}
PROMPTS = [Prompt("Use the shell. [rig:shell]"), Prompt("Once more. [rig:again]", resume=True)]


@dataclass
class CodexOutcome:
    """The session's record, the import's result and its traces."""

    session: CodexSession
    record: Record
    import_out: str
    import_err: str
    import_rc: int
    traces: list[list[dict[str, Any]]]


@pytest.fixture(scope="module")
def codex_outcome(codex_exe: Path, tmp_path_factory: pytest.TempPathFactory) -> CodexOutcome:
    """The two prompts run once; the transcripts imported."""
    root = tmp_path_factory.mktemp("codex-rig")
    s = CodexSession(root, codex_exe)
    s.install_hooks()
    record = s.run(SCRIPT, PROMPTS)
    imported = root / "imported"
    res = s.rematch("import", str(s.transcripts()), "--out", str(imported), "-j", "1")
    traces = [rig_compare.read_jsonl(p) for p in sorted((imported / "traces").glob("*.jsonl"))]
    return CodexOutcome(s, record, res.stdout, res.stderr, res.returncode, traces)


def test_every_run_ends_cleanly(codex_outcome: CodexOutcome) -> None:
    """Each codex process exits 0 in time and asked for every scripted step."""
    for run in codex_outcome.record.runs:
        assert not run["timed_out"] and run["rc"] == 0, run["stderr"][-2000:]
    steps = {(r["scenario"], r["step"]) for r in codex_outcome.record.requests}
    for name, script in SCRIPT.items():
        assert {(name, i) for i in range(len(script))} <= steps, name


def test_the_model_gets_each_calls_output(codex_outcome: CodexOutcome) -> None:
    """The request after each call carries its ``function_call_output``."""
    after = codex_outcome.record.messages("shell")[1]
    outputs = [i for i in after["input"] if i.get("type") == "function_call_output"]
    assert outputs and "rig-ok" in json.dumps(outputs[-1])


def test_transcript_imports_with_no_skipped_line(codex_outcome: CodexOutcome) -> None:
    """``rematch import`` of ``$CODEX_HOME/sessions``: exit 0, nothing skipped; the calls are results."""
    assert codex_outcome.import_rc == 0, codex_outcome.import_out + codex_outcome.import_err
    assert " 0 skipped, 0 failed" in codex_outcome.import_out, codex_outcome.import_out
    assert "skipped" not in codex_outcome.import_err, codex_outcome.import_err
    results = [r for t in codex_outcome.traces for r in t if r["ev"] == "tool_result"]
    assert [r["input"].get("cmd") for r in results] == [
        "echo rig-ok", "ls /nonexistent-rig-dir", "printf 'alpha\\n' > notes.txt && cat notes.txt",
        "echo second-prompt"]
    assert all(r["tool"] and isinstance(r["args_hash"], str) and len(r["args_hash"]) == 64 for r in results)
    assert [r["is_error"] for r in results] == [False, True, False, False]
    inputs = [r["text"] for t in codex_outcome.traces for r in t if r["ev"] == "input"]
    assert inputs == ["Use the shell. [rig:shell]", "Once more. [rig:again]"]
