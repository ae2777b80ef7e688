"""omp, as it ships (the pinned version), starting a subagent with its ``task`` tool: the import side
and the conversation view.

One prompt: the model calls ``task`` (one item, named ``RigScout``, the task text carrying the
subagent's own marker), then ``hub`` ``wait`` for it; omp runs the subagent in its process against
the same scripted server, the subagent runs ``bash`` and then ``yield``s its result. omp 18.2.3
runs a task in the background by default (``async.enabled``): the ``task`` result comes at once,
its ``details.results`` empty and the subagent named in ``details.progress[].id`` (found here).
Checked: the run ends cleanly; omp wrote the subagent's session to ``<parent file less
.jsonl>/RigScout.jsonl`` and named ``RigScout`` in the ``task`` result; both import, the subagent
as the parent's child; ``rematch show PARENT --conversation`` nests the subagent under the ``task``
call and the subagent's view names that call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rig_session import OmpSession, Prompt, Record

SCRIPT: dict[str, Any] = {
    "delegate": [
        {"tool": "task", "input": {"name": "RigScout", "agent": "task", "task": "Check the files. [rig:sub]"}},
        {"tool": "hub", "input": {"op": "wait", "ids": ["RigScout"]}},
        {"text": "Delegated."},
    ],
    "sub": [
        {"tool": "bash", "input": {"command": "echo from-sub"}},
        {"tool": "yield", "input": {"data": "from-sub seen"}},
        {"text": "Sub done."},
    ],
}


@dataclass
class TaskOutcome:
    """The session's record, the import's exit status, the imported data folder."""

    session: OmpSession
    record: Record
    import_rc: int
    imported: Path


@pytest.fixture(scope="module")
def task_outcome(omp_exe: Path, tmp_path_factory: pytest.TempPathFactory) -> TaskOutcome:
    """The prompt run once in omp; its sessions folder imported."""
    s = OmpSession(tmp_path_factory.mktemp("omp-task"), omp_exe)
    s.install_hooks()
    record = s.run(SCRIPT, [Prompt("Delegate the check. [rig:delegate]")])
    imported = s.root / "imported"
    res = s.rematch("import", str(s.transcripts()), "--out", str(imported), "-j", "1")
    return TaskOutcome(s, record, res.returncode, imported)


def _show(o: TaskOutcome, sid: str, *fmt: str) -> str:
    res = o.session.rematch("show", sid, "--data", str(o.imported), "--conversation", *fmt)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_omp_writes_the_subagent_beside_its_parent(task_outcome: TaskOutcome) -> None:
    """The layout the plugin reads: the subagent's file in the parent's artifacts folder, named by the
    id the ``task`` result gives."""
    [run] = task_outcome.record.runs
    assert not run["timed_out"] and run["rc"] == 0, run["stderr"][-2000:]
    files = sorted(task_outcome.session.transcripts().rglob("*.jsonl"))
    [parent] = [p for p in files if (p.parent / p.name[: -len(".jsonl")]).is_dir()]
    sub = parent.parent / parent.name[: -len(".jsonl")] / "RigScout.jsonl"
    assert sub.is_file(), files
    results = [json.loads(line) for line in parent.read_text().splitlines() if '"toolResult"' in line]
    [task] = [r["message"] for r in results if r.get("message", {}).get("toolName") == "task"]
    details = task["details"]
    assert [r["id"] for r in details["results"] or details["progress"]] == ["RigScout"]
    # The subagent's file has run to its end (the parent waited): its bash call and its yield.
    assert '"from-sub' in sub.read_text() and '"yield"' in sub.read_text()


def test_the_subagent_is_nested_under_the_task_call(task_outcome: TaskOutcome) -> None:
    assert task_outcome.import_rc == 0
    rows = json.loads(task_outcome.session.rematch("sessions", "--data", str(task_outcome.imported), "--json",
                                                   "--flat").stdout)
    [sub] = [r for r in rows if r.get("agent_kind") == "sub"]
    [parent] = [r for r in rows if r is not sub]
    conv = json.loads(_show(task_outcome, parent["session_id"], "--format", "json"))
    [task] = [e for e in conv["entries"] if e.get("subagent")]
    assert task["tool"] == "task"
    link = task["subagent"]
    assert link["session_id"] == sub["session_id"] and link["key"]
    assert any(e["kind"] == "call" and "from-sub" in str(e["input"]) for e in link["conversation"]["entries"])
    back = json.loads(_show(task_outcome, sub["session_id"], "--format", "json"))
    assert back["parent"] == {"session_id": parent["session_id"], "key": conv["key"], "call_id": task["call_id"]}
    assert f"subagent {sub['session_id']}: rematch show" in _show(task_outcome, parent["session_id"])
