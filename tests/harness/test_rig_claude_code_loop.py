"""Claude Code (pinned) in a session whose loop goes on past a stop, compacts, and changes model.

Three prompts, the second and third resuming the session (about 8 s in all):

1. ``[rig:again]``: a plain answer; a ``Stop`` hook of the user's (beside rematch's) blocks the
   first stop, so the loop goes on (``Stop hook feedback:``) and a second ``Stop`` fires with
   ``stop_hook_active: true``;
2. ``/compact``: Claude Code compacts the conversation (its summary request goes to the scripted
   server; the transcript gets a ``compact_boundary``);
3. ``[rig:after]`` under another ``--model``: a Bash call and an answer after the compaction; the
   user's hook blocks this run's stop too.

Found by this rig: live counted the first response again at the second ``Stop`` (its usage twice,
one turn_end too many), as a real session counted 3,087 output tokens live against 438 on import;
the ``/compact`` run's two helper agents made live ``sub`` traces the import has no file for; and
each resume cut the live trace's ``session_shutdown`` and wrote it again (the first prompt runs
alone here, so the test can hold the trace's bytes before the resumes).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import rig_compare
from rig_session import ClaudeCodeSession, Prompt, Record

SCRIPT: dict[str, Any] = {
    "again": [{"text": "First answer."}, {"text": "Second answer."}],
    "after": [{"tool": "Bash", "input": {"command": "echo after", "description": "Print"}},
              {"text": "After done."}, {"text": "After more."}],
}
OTHER_MODEL = "claude-opus-4-1"
PROMPTS = [Prompt("Answer. [rig:again]"), Prompt("/compact", resume=True),
           Prompt("Go on. [rig:after]", resume=True, model=OTHER_MODEL)]
#: The user's Stop hook: blocks a stop unless the loop already goes on from a blocked one.
BLOCK_ONCE = """#!/bin/sh
if grep -q '"stop_hook_active": *true'; then exit 0; fi
echo '{"decision": "block", "reason": "Say more."}'
"""


@dataclass
class Outcome:
    """The session's record, its transcript, and its live and imported main traces."""

    record: Record
    transcript: list[dict[str, Any]]
    live: list[dict[str, Any]]
    imported: list[dict[str, Any]]
    import_out: str
    #: The live trace's bytes once the first process had ended, and at the end.
    before: bytes
    after: bytes
    #: The trace files of the session (its subagents' too), live and imported.
    live_files: list[str]
    imported_files: list[str]


def _ended(data: Path, sid: str) -> None:
    """Wait (up to 20 s) for the service to have applied the session's ``SessionEnd``."""
    state = data / "live" / f"{sid}.json"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if state.exists() and json.loads(state.read_bytes()).get("ended") is not None:
            return
        time.sleep(0.05)
    raise AssertionError("the first process's SessionEnd was never applied")


@pytest.fixture(scope="module")
def outcome(claude_code_exe: Path, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    """The three prompts run once, the transcripts imported into a second data folder."""
    root = tmp_path_factory.mktemp("cc-loop")
    s = ClaudeCodeSession(root, claude_code_exe)
    s.install_hooks()
    hook = root / "block_once.sh"
    hook.write_text(BLOCK_ONCE)
    hook.chmod(0o755)
    settings = json.loads((s.config / "settings.json").read_text())
    settings["hooks"].setdefault("Stop", []).append({"hooks": [{"type": "command", "command": str(hook)}]})
    (s.config / "settings.json").write_text(json.dumps(settings))
    sid = str(uuid.uuid4())
    s.start_service()
    trace = s.data / "traces" / f"{sid}.jsonl"
    try:
        first = s.run(SCRIPT, PROMPTS[:1], session_id=sid)
        _ended(s.data, sid)
        before = trace.read_bytes()
        rest = s.run(SCRIPT, PROMPTS[1:], session_id=sid, resumed=True)
    finally:
        s.stop_service()
    record = Record(first.runs + rest.runs, first.requests + rest.requests)
    imported = root / "imported"
    res = s.rematch("import", str(s.transcripts()), "--out", str(imported), "-j", "1")
    [path] = s.transcripts().glob(f"*/{sid}.jsonl")
    return Outcome(record, rig_compare.read_jsonl(path), rig_compare.read_jsonl(trace),
                   rig_compare.read_jsonl(imported / "traces" / f"{sid}.jsonl"),
                   res.stdout + res.stderr + f" rc={res.returncode}", before, trace.read_bytes(),
                   sorted(p.name for p in (s.data / "traces").glob(f"{sid}*")),
                   sorted(p.name for p in (imported / "traces").glob(f"{sid}*")))


def test_the_session_ran_as_scripted(outcome: Outcome) -> None:
    """Every run exits 0; the stop was blocked twice (two feedback lines) and the session compacted."""
    for run in outcome.record.runs:
        assert not run["timed_out"] and run["rc"] == 0, run["stderr"][-2000:]
    meta = [json.dumps(x.get("message", {}).get("content")) for x in outcome.transcript if x.get("isMeta")]
    assert sum("Stop hook feedback:" in m for m in meta) == 2
    assert any(x.get("subtype") == "compact_boundary" for x in outcome.transcript)
    assert " 0 skipped, 0 failed" in outcome.import_out and "rc=0" in outcome.import_out, outcome.import_out


@pytest.mark.parametrize("projection", sorted(rig_compare.PROJECTIONS))
def test_live_equals_import(outcome: Outcome, projection: str) -> None:
    """Past blocked stops, a compaction and a change of model, live and import agree on ``projection``."""
    fn = rig_compare.PROJECTIONS[projection]
    assert outcome.imported and fn(outcome.live) == fn(outcome.imported)


def test_each_response_counts_once(outcome: Outcome) -> None:
    """The output tokens live are the transcript's, each response once (none counted at two stops)."""
    by_id: dict[str, int] = {}
    for x in outcome.transcript:
        msg = x.get("message") or {}
        if x.get("type") == "assistant" and not x.get("isSidechain"):
            by_id[msg["id"]] = max(by_id.get(msg["id"], 0), msg["usage"]["output_tokens"])
    live = sum(r["usage"]["output"] for r in outcome.live if r["ev"] == "turn_end")
    assert live == sum(by_id.values())
    # One run per stop: the blocked stop ends a run, the loop after it is a run with no input.
    assert rig_compare.agent_end_turns(outcome.live) == [1, 1, 2, 1]


def test_the_model_change_is_recorded(outcome: Outcome) -> None:
    """``--model`` on the resumed prompt: a model_change live, as on import."""
    def changes(trace: list[dict[str, Any]]) -> list[tuple[str, str]]:
        return [(r["from"]["id"], r["to"]["id"]) for r in trace if r["ev"] == "model_change"]

    assert len(changes(outcome.live)) == 1 and changes(outcome.live) == changes(outcome.imported)


def test_resumes_append_to_the_live_trace(outcome: Outcome) -> None:
    """The bytes the first process left are a prefix of the trace after two resumes, which holds a
    ``session_shutdown`` per process, live as on import."""
    assert rig_compare.read_jsonl_bytes(outcome.before)[-1]["ev"] == "session_shutdown"
    assert outcome.after.startswith(outcome.before) and len(outcome.after) > len(outcome.before)
    assert rig_compare.lifetimes(outcome.live) == rig_compare.lifetimes(outcome.imported) == len(PROMPTS)


def test_compact_helpers_leave_no_live_trace(outcome: Outcome) -> None:
    """``/compact``'s helper agents write no file: no sub trace live either (the transcript is the authority)."""
    assert outcome.live_files == outcome.imported_files == [f"{outcome.live[0]['session_id']}.jsonl"]
