"""Issue 28: a held call's approval carries the fingerprint its event carries, live and imported.

The approval's nonce-less fingerprint (``event_fingerprint``; the binding adds the nonce
to the same members) used to be computed without the call's turn and with the raw
subagent id, so it matched no line of the event stream although docs/ipc-v2.md says
they are equal. Here the real hook client replays a session against a real
``rematch serve`` whose policy holds every shell call; each held call is listed, its
fingerprint kept, and approved through the CLI; then the live events/<session>.jsonl
line of the call, and the import of the session's transcript, must carry it.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from capture_helpers import HOOK_ARGV, REMATCH, hook_env, load_fixture_progress, read_jsonl

from rematch_trace.store.datafolder import DataDir

SID = "7c1e2a4b-5d6f-4a8b-9c0d-1e2f3a4b5c6d"
# The person is the test process, approving without a terminal (the one-time code is tested in
# tests/live/test_approver_guard.py).
HOLD_SHELL = """version: 1
approval_timeout_s: 120
approve_without_code: true
default: no_override
rules:
  - id: hold-shell
    decision: hold
    explanation: every shell call waits for a person here
    when:
      tools: [Bash]
"""


def wait_for(predicate: Any, what: str, timeout: float = 90.0) -> None:
    """Poll ``predicate`` until true (generous: processes start slowly on a loaded machine)."""
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


@contextmanager
def serving(tmp_path: Path, data: Path, env: dict[str, str]) -> Iterator[None]:
    """``rematch serve`` holding every shell call, for the block."""
    policy = tmp_path / "policy.yml"
    policy.write_text(HOLD_SHELL)
    proc = subprocess.Popen([REMATCH, "serve", "--out", str(data), "--policy", str(policy)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: approvals(data, env) is not None or proc.poll() is not None, "the service")
        assert proc.poll() is None, proc.communicate()
        yield
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def approvals(data: Path, env: dict[str, str]) -> list[dict[str, Any]] | None:
    """The held calls ``rematch approvals`` lists; ``None`` while no service answers."""
    res = subprocess.run([REMATCH, "approvals", "--out", str(data), "--json"], env=env, capture_output=True,
                         text=True, timeout=60)
    return json.loads(res.stdout) if res.returncode == 0 else None


def harness_argv(data: Path) -> list[str]:
    """The hook command as a harness runs it: through a shell script (a parent whose command line does
    not name the hook client), started by the test in a session of its own, so that the test process,
    which plays the person approving, is neither the harness nor in its session (docs/threat-model.md)."""
    harness = data.parent / "harness.sh"
    harness.write_text(f"{shlex.join(HOOK_ARGV)}; exit $?\n")
    return ["sh", str(harness)]


def run_in_harness(payload: dict[str, Any], env: dict[str, str], data: Path) -> subprocess.CompletedProcess[bytes]:
    """One hook event run by the stand-in harness (:func:`harness_argv`)."""
    return subprocess.run(harness_argv(data), input=json.dumps(payload).encode(), capture_output=True, env=env,
                          timeout=120, start_new_session=True)


def hook_held(payload: dict[str, Any], env: dict[str, str], data: Path) -> dict[str, Any]:
    """Run the hook for a call the service holds: list the approval, approve it, let the hook finish."""
    # Through a shell script in a session of its own: the held call's harness (the hook's parent, whose
    # command line does not name the hook client) must be neither an ancestor of the approver nor in
    # its session (docs/threat-model.md).
    hook = subprocess.Popen(harness_argv(data), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
    assert hook.stdin is not None
    hook.stdin.write(json.dumps(payload).encode())
    hook.stdin.close()
    found: list[dict[str, Any]] = []
    wait_for(lambda: bool(found.extend(approvals(data, env) or []) or found), "the held call")
    (held,) = found
    ok = subprocess.run([REMATCH, "approve", held["approval_id"], "--out", str(data)], env=env,
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert hook.wait(60) == 0
    assert hook.stdout is not None and hook.stderr is not None
    assert (hook.stdout.read(), hook.stderr.read()) == (b"", b"")  # approved: nothing printed
    return held


def pre_tool_use_fingerprints(data: Path) -> dict[str, str]:
    """Each call's ``pre_tool_use`` fingerprint in every events file of ``data``."""
    return {e["source_tool_call_id"]: e["action_fingerprint"]
            for f in sorted((data / "events").glob("*.jsonl")) for e in read_jsonl(f)
            if e["kind"] == "pre_tool_use"}


def test_an_approval_and_the_event_stream_and_the_import_carry_one_fingerprint(tmp_path: Path,
                                                                              project: Path) -> None:
    data = tmp_path / "data"
    env = dict(hook_env(tmp_path / "home", data, SID, project, service=True), REMATCH_IPC_DEADLINE_MS="120000")
    transcript = tmp_path / "home" / ".claude" / "projects" / "-project" / f"{SID}.jsonl"
    transcript.parent.mkdir(parents=True)
    hooks, progress, text = load_fixture_progress(project, transcript)
    lines = text.splitlines(keepends=True)
    held: dict[str, dict[str, Any]] = {}
    with serving(tmp_path, data, env):
        for payload, n in zip(hooks, progress, strict=True):
            transcript.write_bytes(b"".join(lines[:n]))
            if payload["hook_event_name"] == "PreToolUse" and payload["tool_name"] == "Bash":
                held[payload["tool_use_id"]] = hook_held(payload, env, data)
            else:
                res = run_in_harness(payload, env, data)
                assert (res.returncode, res.stdout, res.stderr) == (0, b"", b""), payload["hook_event_name"]
    assert set(held) == {"toolu_03", "toolu_04", "toolu_05"}
    live = pre_tool_use_fingerprints(data)
    other = tmp_path / "imported"
    res = subprocess.run([REMATCH, "import", str(transcript), "--out", str(other), "-j", "1", "--json"],
                         capture_output=True, env=hook_env(tmp_path / "home", other))
    assert res.returncode == 0, res.stderr
    imported = pre_tool_use_fingerprints(other)
    for call_id, approval in held.items():
        assert approval["event_fingerprint"] == live[call_id] == imported[call_id], call_id
        # The binding is the same members with the nonce: never the event's own fingerprint.
        assert approval["action_fingerprint"] != approval["event_fingerprint"]
    # Three calls with the same input, in two turns: the turn and the call id are bound.
    assert len({a["event_fingerprint"] for a in held.values()}) == 3
    # Issue 44: each hold and its approval are events of the call in the live stream, bound to it by
    # its call id and its event fingerprint (the approval's own binding is never written).
    verdicts = verdict_events(data)
    for call_id, approval in held.items():
        assert [(e["metadata"]["verdict"], e["metadata"]["rule"]) for e in verdicts[call_id]] == [
            ("hold", "policy:hold-shell"), ("approve", "approval:approved")], call_id
        for e in verdicts[call_id]:
            assert e["action_fingerprint"] == approval["event_fingerprint"] == live[call_id]
            assert e["metadata"]["approval_id"] == approval["approval_id"]
            assert approval["action_fingerprint"] not in json.dumps(e)
    assert "make deploy" not in json.dumps(verdicts) or all(
        e["args_summary"] == "make deploy" for es in verdicts.values() for e in es)  # the redacted summary only
    # ...and the export sends them on the call's span, as the guardrail verdict events.
    assert exported_verdicts(data, env) == {c: ["hold", "approve"] for c in held}
    # The import of the same transcript into the same folder keeps the live trace: nothing lost, nothing twice.
    res = subprocess.run([REMATCH, "import", str(transcript), "--out", str(data), "-j", "1"], capture_output=True,
                         env=env)
    assert res.returncode == 0, res.stderr
    assert verdict_events(data) == verdicts
    assert exported_verdicts(data, env) == {c: ["hold", "approve"] for c in held}
    # An import that wins over the live trace (a live capture that stopped early: here its trace cut to its
    # first line) writes the stream from the transcript, and carries the live verdicts over, once.
    trace = DataDir(data).trace_path(SID)
    trace.write_bytes(trace.read_bytes().splitlines(keepends=True)[0])
    transcript.write_bytes(transcript.read_bytes() + b"\n")  # a changed file: the import reads it again
    for _ in range(2):
        res = subprocess.run([REMATCH, "import", str(transcript), "--out", str(data), "-j", "1", "--json"],
                             capture_output=True, env=env)
        assert res.returncode == 0, res.stderr
        assert len(trace.read_bytes().splitlines()) > 1  # the import's trace, not the cut live one
        assert verdict_events(data) == verdicts
        assert exported_verdicts(data, env) == {c: ["hold", "approve"] for c in held}
        transcript.write_bytes(transcript.read_bytes() + b"\n")


def verdict_events(data: Path) -> dict[str, list[dict[str, Any]]]:
    """Each call's ``tool_verdict`` events in every events file of ``data``, in order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for f in sorted((data / "events").glob("*.jsonl")):
        for e in read_jsonl(f):
            if e["kind"] == "tool_verdict":
                out.setdefault(e["source_tool_call_id"], []).append(e)
    return out


def exported_verdicts(data: Path, env: dict[str, str]) -> dict[str, list[str]]:
    """``rematch export otlp --file``: each tool span's ``rematch.verdict`` events, by its call id."""
    out_file = data.parent / "export.otlp.json"
    res = subprocess.run([REMATCH, "export", "otlp", "--out", str(data), "--file", str(out_file)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    got: dict[str, list[str]] = {}
    for line in out_file.read_bytes().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    attrs = {a["key"]: a["value"] for a in span.get("attributes", [])}
                    call = attrs.get("gen_ai.tool.call.id", {}).get("stringValue")
                    for ev in span.get("events", []):
                        if ev["name"] != "rematch.verdict":
                            continue
                        ev_attrs = {a["key"]: a["value"]["stringValue"] for a in ev.get("attributes", [])
                                    if "stringValue" in a["value"]}
                        assert ev_attrs["gen_ai.guardrail.target.id"] == call
                        got.setdefault(call, []).append(ev_attrs["rematch.verdict"])
    return got


def test_a_subagents_approval_carries_its_events_fingerprint(tmp_path: Path, project: Path) -> None:
    data = tmp_path / "data"
    env = dict(hook_env(tmp_path / "home", data, SID, project, service=True), REMATCH_IPC_DEADLINE_MS="120000")
    base = {"session_id": SID, "transcript_path": os.fspath(tmp_path / "t.jsonl"), "cwd": str(project)}
    turn = {"prompt_id": "5b0c7e2a-1d3f-4e6a-9b8c-000000000009", "permission_mode": "default"}
    sub = {"agent_id": "a7f3", "agent_type": "general-purpose"}
    call = {"tool_name": "Bash", "tool_input": {"command": "make deploy"}, "tool_use_id": "toolu_sub1"}
    with serving(tmp_path, data, env):
        for payload in ({**base, "hook_event_name": "SessionStart", "source": "startup"},
                        {**base, **turn, "hook_event_name": "UserPromptSubmit", "prompt": "deploy it"},
                        {**base, **turn, **sub, "hook_event_name": "SubagentStart"}):
            assert run_in_harness(payload, env, data).returncode == 0
        approval = hook_held({**base, **turn, **sub, "hook_event_name": "PreToolUse", **call}, env, data)
        for payload in ({**base, **turn, **sub, "hook_event_name": "PostToolUse", **call,
                         "tool_response": {"stdout": "ok", "stderr": "", "interrupted": False}},
                        {**base, **turn, **sub, "hook_event_name": "SubagentStop", "stop_hook_active": False},
                        {**base, "hook_event_name": "SessionEnd", "reason": "other"}):
            assert run_in_harness(payload, env, data).returncode == 0
    subagent = f"{SID}.agent-a7f3"
    assert approval["agent_sub_id"] == subagent
    events = [e for e in read_jsonl(DataDir(data).events_path(subagent)) if e["source_tool_call_id"] == "toolu_sub1"]
    pre = next(e for e in events if e["kind"] == "pre_tool_use")
    assert (pre["agent_sub_id"], pre["source_turn_id"]) == (subagent, turn["prompt_id"])
    assert approval["event_fingerprint"] == pre["action_fingerprint"]
