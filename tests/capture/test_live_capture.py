"""Live capture through the real hook command: one process per hook event, JSON on stdin."""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest
from capture_helpers import REMATCH, hook_env, load_fixture_progress, make_repo, read_jsonl, run_hook

from rematch_trace.store.datafolder import DataDir
from rematch_trace.testing import validate_trace

SID = "7c1e2a4b-5d6f-4a8b-9c0d-1e2f3a4b5c6d"


def _replay(tmp_path: Path, project: Path, data: Path) -> tuple[list[dict[str, Any]], Path]:
    transcript = tmp_path / "home" / ".claude" / "projects" / "-project" / f"{SID}.jsonl"
    transcript.parent.mkdir(parents=True)
    hooks, progress, text = load_fixture_progress(project, transcript)
    lines = text.splitlines(keepends=True)
    env = hook_env(tmp_path / "home", data, SID, project)
    for payload, n in zip(hooks, progress, strict=True):
        # The transcript as the session had written it when the hook ran (a stop reads its end).
        transcript.write_bytes(b"".join(lines[:n]))
        res = run_hook(payload, env)
        assert (res.returncode, res.stdout, res.stderr) == (0, b"", b""), payload["hook_event_name"]
    return hooks, transcript


def _ledger(data: Path) -> list[dict[str, Any]]:
    db = sqlite3.connect(data / "ledger.sqlite")
    db.row_factory = sqlite3.Row
    rows = [dict(r) for r in db.execute("SELECT * FROM sessions ORDER BY session_id")]
    db.close()
    return rows


def test_recorded_session_is_traced_live(tmp_path: Path, project: Path) -> None:
    data = tmp_path / "data"
    _replay(tmp_path, project, data)
    dd = DataDir(data)
    trace = read_jsonl(dd.trace_path(SID))
    assert validate_trace(trace) == []
    start = trace[0]
    assert start["mode"] == "live" and start["cwd"] == str(project) and start["repo"] == str(project)
    assert start["head_sha"] == "8f3c2a1b0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b"
    assert start["repo_remote"] == "https://github.com/acme/widget.git"  # no credentials
    assert start["model"] == {"provider": "anthropic", "id": "claude-opus-4-6"}
    inputs = [r for r in trace if r["ev"] == "input"]
    assert [(r["source"], r["prelabel"], r["idle"]) for r in inputs] == [
        ("prompt", "none", True), ("prompt", "revert", True), ("prompt", "mark:correction", True)
    ]
    assert [r["class"] for r in trace if r["ev"] == "mark"] == ["correction"]
    results = [r for r in trace if r["ev"] == "tool_result"]
    assert [(r["tool"], r["call_id"], r["is_error"], r["error_class"]) for r in results] == [
        ("Read", "toolu_01", False, None), ("Edit", "toolu_02", False, None),
        ("Bash", "toolu_03", True, "exit_nonzero"), ("Bash", "toolu_04", True, "exit_nonzero"),
        ("Bash", "toolu_05", True, "exit_nonzero"), ("Edit", "toolu_07", False, None),
    ]
    # One turn_end per response (as on import); each run's last one carries the Stop's text.
    last_of_run = [a["text_head"] for a, b in itertools.pairwise(trace) if a["ev"] == "turn_end" and b["ev"] == "agent_end"]
    assert last_of_run == ["Added the flag; the tests fail on an unrelated import of frob.", "Reverted.", "Noted."]
    assert sum(r["ev"] == "turn_end" for r in trace) > 3
    assert sum(r["ev"] == "agent_end" for r in trace) == 3
    end = trace[-1]
    assert end["reasons"] == ["redirect", "error_cluster", "mark"] and end["flagged"]
    [[changed, digest]] = end["files_changed"]
    assert changed == "cli.py" and len(digest) == 64
    events = read_jsonl(dd.events_path(SID))
    kinds = [e["kind"] for e in events]
    assert kinds[:2] == ["session_start", "instruction_loaded"] and kinds[-1] == "session_end"
    assert kinds.count("pre_tool_use") == 6 and kinds.count("post_tool_failure") == 3
    assert kinds.count("user_prompt") == 3
    pending = orjson.loads(dd.pending_path(SID).read_bytes())
    assert pending["reasons"] == ["redirect", "error_cluster", "mark"]
    [row] = _ledger(data)
    assert row["mode"] == "live" and row["session_id"] == SID and row["flagged"] == 1
    assert not (data / "live" / "errors.log").exists()


def _project_fields(trace: list[dict[str, Any]]) -> dict[str, Any]:
    runs: list[list[str]] = [[]]
    for r in trace:
        if r["ev"] == "turn_end":
            runs[-1].append(r["text_head"])
        elif r["ev"] == "agent_end":
            runs.append([])
    return {
        "inputs": [(r["text"], r["prelabel"], r["after_deliverable"]) for r in trace if r["ev"] == "input"],
        "results": [(r["tool"], r["call_id"], r["input"], r["args_hash"], r["is_error"], r["error_class"])
                    for r in trace if r["ev"] == "tool_result"],
        "runs": sum(r["ev"] == "agent_end" for r in trace),
        "last_text_of_each_run": [run[-1] for run in runs if run],
        "flags": trace[-1]["reasons"],
        "identity": {k: trace[0][k] for k in ("session_id", "cwd", "repo", "repo_remote", "subpath", "model")},
    }


def _usage_of_runs(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each run's summed turn_end usage."""
    runs: list[dict[str, Any]] = [{}]
    for r in trace:
        if r["ev"] == "turn_end":
            for k, v in r["usage"].items():
                if v is not None:
                    runs[-1][k] = runs[-1].get(k, 0) + v
        elif r["ev"] == "agent_end":
            runs.append({})
    return [u for u in runs if u]


def test_live_and_import_of_the_same_session_agree(tmp_path: Path, project: Path) -> None:
    data = tmp_path / "data"
    # The project's CLAUDE.md is a rematch entry (a manifest beside it): both read it as loaded.
    (project / "rematch.json").write_text(json.dumps({"id": "widget-rules", "version": "1.2.0",
                                                      "content_sha256": "AB" * 32}))
    _hooks, transcript = _replay(tmp_path, project, data)
    live = read_jsonl(DataDir(data).trace_path(SID))
    other = tmp_path / "imported"
    res = subprocess.run([REMATCH, "import", str(transcript), "--out", str(other), "-j", "1", "--json"],
                         capture_output=True, env=hook_env(tmp_path / "home", other))
    assert res.returncode == 0, res.stderr
    imported = read_jsonl(DataDir(other).trace_path(SID))
    assert imported[0]["mode"] == "import"
    assert _project_fields(live) == _project_fields(imported)
    expected = [{"id": "widget-rules", "version": "1.2.0", "sha": "ab" * 32}]
    assert live[0]["loaded_entries"] == imported[0]["loaded_entries"] == expected
    assert live[0]["visible_entries"] == imported[0]["visible_entries"] == []
    assert not any(r["ev"] == "retrieval" for r in live + imported)
    # One live turn_end per run carries what the import's turn_end records of that run add up to.
    assert _usage_of_runs(live) == _usage_of_runs(imported)
    assert [u["output"] for u in _usage_of_runs(live)] == [40 * 6 + 10 * 21, 40 * 2 + 10 * 15, 40 + 10 * 9]
    # What the live trace carries more: the input source, the mark, HEAD, the changed files.
    assert {r["source"] for r in imported if r["ev"] == "input"} == {""}
    assert not any(r["ev"] == "mark" for r in imported) and imported[0]["head_sha"] is None
    assert "files_changed" not in imported[-1]
    # The import reads the CLAUDE.md attachment as the live InstructionsLoaded hook does: one instruction_loaded.
    # Each event's turn (the prompt id) and permission mode agree, and so the fingerprints that bind the turn.
    def events_of(folder: Path) -> list[tuple[Any, ...]]:
        return sorted((e["kind"], e["source_tool_call_id"], e["action_fingerprint"], e["source_turn_id"] or "",
                       e["metadata"].get("host_permission_mode", ""))
                      for e in read_jsonl(DataDir(folder).events_path(SID)))

    live_events = events_of(data)
    assert live_events == events_of(other)
    turns = {e[3] for e in live_events if e[0] in ("user_prompt", "pre_tool_use", "post_tool_use")}
    assert turns == {f"5b0c7e2a-1d3f-4e6a-9b8c-{n:012d}" for n in (1, 2, 3)}
    assert {e[4] for e in live_events if e[0] == "user_prompt"} == {"default", "acceptEdits"}


def test_importing_a_live_session_keeps_the_live_trace(tmp_path: Path, project: Path) -> None:
    data = tmp_path / "data"
    _hooks, transcript = _replay(tmp_path, project, data)
    dd = DataDir(data)
    before = {p.name: p.read_bytes() for p in (data / "traces").iterdir()}
    events_before = dd.events_path(SID).read_bytes()
    for _ in range(2):
        res = subprocess.run([REMATCH, "import", str(transcript.parent), "--json", "-j", "1"],
                             capture_output=True, env=hook_env(tmp_path / "home", data))
        assert res.returncode == 0, res.stderr
        report = orjson.loads(res.stdout)
        assert report["sessions_imported"] == 0
    assert {p.name: p.read_bytes() for p in (data / "traces").iterdir()} == before
    assert dd.events_path(SID).read_bytes() == events_before
    [row] = _ledger(data)
    assert row["mode"] == "live"
    res = subprocess.run([REMATCH, "import", str(transcript), "--json", "-j", "1"], capture_output=True,
                         env=hook_env(tmp_path / "home", data))
    assert orjson.loads(res.stdout)["files"]["unchanged"] == 1
    # The first import reported the session as kept live, once.
    touched = transcript.with_name("copy.jsonl")
    touched.write_bytes(transcript.read_bytes())
    res = subprocess.run([REMATCH, "import", str(touched), "--json", "-j", "1"], capture_output=True,
                         env=hook_env(tmp_path / "home", data))
    assert orjson.loads(res.stdout)["sessions_kept_live"] == 1
    assert len(_ledger(data)) == 1


def _session(tmp_path: Path, sid: str = "s-live-1") -> tuple[dict[str, str], dict[str, Any], Path]:
    project = make_repo(tmp_path / f"repo-{sid}")
    data = tmp_path / "data"
    env = hook_env(tmp_path, data, sid, project)
    base = {"session_id": sid, "transcript_path": str(tmp_path / f"{sid}.jsonl"), "cwd": str(project)}
    return env, base, data


def _send(env: dict[str, str], base: dict[str, Any], name: str, **fields: Any) -> None:
    res = run_hook({**base, "hook_event_name": name, **fields}, env)
    assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")


def _pre(env: dict[str, str], base: dict[str, Any], call: str, command: str = "ls") -> None:
    _send(env, base, "PreToolUse", tool_name="Bash", tool_use_id=call, tool_input={"command": command})


def test_interrupt_rule_and_mark_spellings(tmp_path: Path) -> None:
    env, base, data = _session(tmp_path)
    _send(env, base, "SessionStart", source="startup")
    _send(env, base, "UserPromptSubmit", prompt="refactor the parser module into two files please")
    _pre(env, base, "toolu_a")
    # Delivered into the running loop: no Stop since the last input.
    _send(env, base, "UserPromptSubmit", prompt="also keep the old entry point")
    _send(env, base, "Stop", last_assistant_message="Done.")
    _send(env, base, "UserPromptSubmit", prompt="/rematch-mark scope went beyond the parser")
    _send(env, base, "Stop", last_assistant_message="Marked.")
    # Esc: Claude Code runs no Stop hook; the transcript's last turn shows the abort.
    _send(env, base, "UserPromptSubmit", prompt="/rematch:rematch-mark preference short answers")
    Path(base["transcript_path"]).write_text(
        orjson.dumps({"type": "user", "message": {"role": "user", "content": [
            {"type": "text", "text": "[Request interrupted by user]"}]}}).decode() + "\n")
    _send(env, base, "UserPromptSubmit", prompt="ok continue")
    _send(env, base, "SessionEnd", reason="other")
    trace = read_jsonl(DataDir(data).trace_path("s-live-1"))
    assert validate_trace(trace) == []
    assert [(r["prelabel"], r["idle"]) for r in trace if r["ev"] == "input"] == [
        ("none", True), ("interrupt", False), ("mark:scope", True), ("mark:preference", True), ("none", True)
    ]
    assert [(r["class"], r["note"]) for r in trace if r["ev"] == "mark"] == [
        ("scope", "went beyond the parser"), ("preference", "short answers")
    ]
    # The call that never answered before the stop is blocked, with the original input's hash.
    [blocked] = [r for r in trace if r["ev"] == "tool_blocked"]
    assert blocked["call_id"] == "toolu_a" and blocked["tool"] == "Bash" and len(blocked["args_hash"]) == 64


def _skill(folder: Path, manifest: dict[str, Any] | None, skill_md: bool = True) -> None:
    folder.mkdir(parents=True)
    if skill_md:
        (folder / "SKILL.md").write_text("---\nname: x\n---\nDo the thing.\n")
    if manifest is not None:
        (folder / "rematch.json").write_text(json.dumps(manifest))


def test_visible_entries_are_the_rematch_skills_in_the_sessions_skill_folders(tmp_path: Path) -> None:
    env, base, data = _session(tmp_path)  # HOME is tmp_path: the user's skills are in tmp_path/.claude/skills
    user = tmp_path / ".claude" / "skills"
    _skill(user / "notes", {"id": "release-notes", "version": "2.0.0"})
    _skill(user / "plain", None)  # a skill, but no manifest: not a rematch entry
    _skill(user / "loose", {"id": "not-a-skill"}, skill_md=False)  # a manifest without a skill
    project = Path(base["cwd"])
    _skill(project / ".claude" / "skills" / "deploy", {"version": "1"})  # no id: the folder's name
    _skill(tmp_path / ".claude" / "skills" / "notes-copy", {"id": "release-notes"})  # the same id twice
    (project / "pkg").mkdir()
    _skill(project / "pkg" / ".claude" / "skills" / "lint", {"id": "lint-rules"})  # cwd's own folder
    _send(env, dict(base, cwd=str(project / "pkg")), "SessionStart", source="startup")
    _send(env, base, "UserPromptSubmit", prompt="tidy the release notes")
    _send(env, base, "Stop", last_assistant_message="Done.")
    # Offered after the start was written: the start does not change.
    _skill(user / "late", {"id": "late-entry"})
    _send(env, base, "SessionStart", source="resume")
    _send(env, base, "SessionEnd", reason="other")
    trace = read_jsonl(DataDir(data).trace_path("s-live-1"))
    assert validate_trace(trace) == []
    assert trace[0]["visible_entries"] == ["deploy", "lint-rules", "release-notes"]
    # Only ids reach the outputs: no skill folder path is persisted.
    for path in (data / "traces").iterdir():
        assert b".claude/skills" not in path.read_bytes()


def test_a_session_with_no_skill_folders_has_no_visible_entries(tmp_path: Path) -> None:
    env, base, data = _session(tmp_path)
    _send(env, base, "SessionStart", source="startup")
    _send(env, base, "UserPromptSubmit", prompt="hello there")
    _send(env, base, "SessionEnd", reason="other")
    assert read_jsonl(DataDir(data).trace_path("s-live-1"))[0]["visible_entries"] == []


def test_permission_denied_and_out_of_order_results(tmp_path: Path) -> None:
    env, base, data = _session(tmp_path, "s-live-2")
    _send(env, base, "UserPromptSubmit", prompt="clean up")
    # Async hooks: the result's hook can run before the call's.
    _send(env, base, "PostToolUse", tool_name="Bash", tool_use_id="toolu_b", tool_input={"command": "ls"},
          tool_response={"stdout": "a\nb\n", "stderr": "", "interrupted": False})
    _pre(env, base, "toolu_b")
    _send(env, base, "PermissionDenied", tool_name="Bash", tool_use_id="toolu_c",
          tool_input={"command": "rm -rf /"}, reason="auto mode: destructive command")
    _send(env, base, "Stop", last_assistant_message="I could not delete it.")
    _send(env, base, "SessionEnd", reason="other")
    trace = read_jsonl(DataDir(data).trace_path("s-live-2"))
    [result] = [r for r in trace if r["ev"] == "tool_result"]
    assert result["call_id"] == "toolu_b" and result["input"] == {"command": "ls"} and result["result_bytes"] == 4
    [blocked] = [r for r in trace if r["ev"] == "tool_blocked"]
    assert (blocked["hook_id"], blocked["reason"]) == ("permission", "auto mode: destructive command")
    events = read_jsonl(DataDir(data).events_path("s-live-2"))
    assert [e["kind"] for e in events if e["source_tool_call_id"]] == ["pre_tool_use", "post_tool_use", "pre_tool_use"]


def test_subagent_events_are_scoped_as_on_import(tmp_path: Path) -> None:
    env, base, data = _session(tmp_path, "s-live-3")
    _send(env, base, "UserPromptSubmit", prompt="look around")
    sub = {"agent_id": "a7be2f0", "agent_type": "Explore"}
    _send(env, base, "SubagentStart", **sub)
    _send(env, base, "PreToolUse", tool_name="Grep", tool_use_id="toolu_s1", tool_input={"pattern": "x"}, **sub)
    _send(env, base, "PostToolUse", tool_name="Grep", tool_use_id="toolu_s1", tool_input={"pattern": "x"},
          tool_response={"mode": "files_with_matches", "numFiles": 0}, **sub)
    _send(env, base, "SubagentStop", last_assistant_message="Nothing found.", **sub)
    _send(env, base, "PreToolUse", tool_name="Grep", tool_use_id="toolu_s2", tool_input={"pattern": "y"},
          agent_id="b000001", agent_type="Explore")
    _send(env, base, "SessionEnd", reason="other")
    dd = DataDir(data)
    sub_trace = read_jsonl(dd.trace_path("s-live-3.agent-a7be2f0"))
    assert validate_trace(sub_trace) == []
    assert sub_trace[0]["agent"] == {"kind": "sub", "name": "claude_code"}
    assert [r["ev"] for r in sub_trace][1:] == ["tool_result", "turn_end", "agent_end", "session_shutdown"]
    sub_events = read_jsonl(dd.events_path("s-live-3.agent-a7be2f0"))
    assert {(e["source_session_id"], e["agent_sub_id"]) for e in sub_events} == {("s-live-3", "s-live-3.agent-a7be2f0")}
    # A subagent without its own stop is ended with the session.
    other = read_jsonl(dd.trace_path("s-live-3.agent-b000001"))
    assert other[-1]["ev"] == "session_shutdown" and [r["ev"] for r in other].count("tool_blocked") == 1
    assert {r["session_id"]: r["mode"] for r in _ledger(data)} == {
        "s-live-3": "live", "s-live-3.agent-a7be2f0": "live", "s-live-3.agent-b000001": "live"
    }
    assert not any(r["ev"] == "tool_result" for r in read_jsonl(dd.trace_path("s-live-3")))


def test_hook_fails_open_and_logs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = hook_env(tmp_path, data)
    for payload in (b"not json", b"", b"[1, 2]", b'{"hook_event_name": "Stop"}', b"\xff\xfe{"):
        res = run_hook(payload, env)
        assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")
    log = (data / "live" / "errors.log").read_text().splitlines()
    assert len(log) == 4 and all("rematch-hook claude_code" in line for line in log)
    assert "not JSON" in log[0] and "not an object" in log[2]
    # A data folder that cannot be created: still silent, still 0.
    env["REMATCH_HOME"] = "/proc/rematch-cannot-be-here"
    res = run_hook({"session_id": "x", "hook_event_name": "SessionStart", "cwd": "/"}, env)
    assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")
    # An unknown harness or event: nothing written, nothing logged.
    env["REMATCH_HOME"] = str(tmp_path / "quiet")
    res = run_hook({"session_id": "x", "hook_event_name": "Notification", "cwd": "/"}, env)
    assert res.returncode == 0 and not (tmp_path / "quiet" / "traces").exists()


def test_no_raw_payload_is_persisted(tmp_path: Path) -> None:
    env, base, data = _session(tmp_path, "s-live-4")
    token = "ghp_" + "Zq8" * 12
    _send(env, base, "UserPromptSubmit", prompt=f"push with GITHUB_TOKEN={token}")
    marker = "RESPONSE-BODY-7f3e9a"
    res = run_hook({**base, "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_t",
                    "tool_input": {"command": f"curl -H 'Authorization: token {token}' https://api.github.com/x"}}, env)
    # No service: the hook judges the call itself, and the built-in policy denies it (issue 28); no token in the reason.
    assert res.returncode == 0 and b'"permissionDecision":"deny"' in res.stdout and token.encode() not in res.stdout
    _send(env, base, "PostToolUse", tool_name="Bash", tool_use_id="toolu_t",
          tool_input={"command": f"curl -H 'Authorization: token {token}' https://api.github.com/x"},
          tool_response={"stdout": marker * 10, "stderr": "", "interrupted": False})
    _send(env, base, "Stop", last_assistant_message="Pushed.")
    held = (data / "live" / "s-live-4.json").read_bytes()
    assert b"held" in held
    _send(env, base, "SessionEnd", reason="other")
    for path in data.rglob("*"):
        if path.is_file():
            body = path.read_bytes()
            assert token.encode() not in body, path
            assert marker.encode() not in body, path
    trace = read_jsonl(DataDir(data).trace_path("s-live-4"))
    assert "[REDACTED" in trace[1]["text"]


def test_a_killed_writer_is_settled_by_the_next_event_and_by_rematch(tmp_path: Path) -> None:
    env, base, data = _session(tmp_path, "s-live-5")
    _send(env, base, "UserPromptSubmit", prompt="one")
    dd = DataDir(data)
    good = dd.trace_path("s-live-5").read_bytes()
    # A writer killed after appending, before saving its state: bytes past the committed length.
    with open(dd.trace_path("s-live-5"), "ab") as f:
        f.write(b'{"seq":99,"t":0,"ev":"inp')
    res = subprocess.run([REMATCH, "show", "s-live-5", "--json"], capture_output=True, env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout == good and dd.trace_path("s-live-5").read_bytes() == good
    with open(dd.trace_path("s-live-5"), "ab") as f:
        f.write(b'{"half')
    _send(env, base, "Stop", last_assistant_message="ok")
    _send(env, base, "UserPromptSubmit", prompt="two")
    trace = read_jsonl(dd.trace_path("s-live-5"))
    assert [r["seq"] for r in trace] == list(range(len(trace)))


def test_a_session_that_never_ended_is_ended_by_rematch(tmp_path: Path) -> None:
    env, base, data = _session(tmp_path, "s-live-6")
    _send(env, base, "UserPromptSubmit", prompt="no, that is wrong")
    _send(env, base, "Stop", last_assistant_message="Sorry.")
    state_file = data / "live" / "s-live-6.json"
    state = orjson.loads(state_file.read_bytes())
    state["last_ms"] -= 2 * 24 * 3600 * 1000  # silent for two days: its harness was killed
    state_file.write_bytes(orjson.dumps(state))
    res = subprocess.run([REMATCH, "flagged", "--json"], capture_output=True, env=env)
    assert res.returncode == 0, res.stderr
    trace = read_jsonl(DataDir(data).trace_path("s-live-6"))
    assert trace[-1]["ev"] == "session_shutdown" and trace[-1]["reasons"] == ["redirect"]
    assert [r["session_id"] for r in orjson.loads(res.stdout)] == ["s-live-6"]


def test_a_resumed_session_continues_its_trace(tmp_path: Path) -> None:
    env, base, data = _session(tmp_path, "s-live-7")
    _send(env, base, "UserPromptSubmit", prompt="first")
    _send(env, base, "Stop", last_assistant_message="one")
    _send(env, base, "SessionEnd", reason="prompt_input_exit")
    _send(env, base, "SessionEnd", reason="prompt_input_exit")  # an end restated changes nothing
    first = read_jsonl(DataDir(data).trace_path("s-live-7"))
    _send(env, base, "SessionStart", source="resume")
    _send(env, base, "UserPromptSubmit", prompt="second")
    _send(env, base, "Stop", last_assistant_message="two")
    _send(env, base, "SessionEnd", reason="other")
    trace = read_jsonl(DataDir(data).trace_path("s-live-7"))
    assert trace[: len(first)] == first  # appended to (tests/capture/test_live_resume_append.py)
    assert [r["ev"] for r in trace].count("session_shutdown") == 2  # one per process lifetime
    assert [r["seq"] for r in trace] == list(range(len(trace)))
    assert [r["text"] for r in trace if r["ev"] == "input"] == ["first", "second"]


@pytest.mark.parametrize("name", ["PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop"])
def test_hostile_field_types_are_skipped_quietly(tmp_path: Path, name: str) -> None:
    env, base, data = _session(tmp_path, "s-live-8")
    for fields in ({"tool_use_id": 5, "tool_name": ["x"]}, {"prompt": {"a": 1}}, {"cwd": 7},
                   {"last_assistant_message": None, "tool_input": "\ud800"}):
        res = run_hook({**base, "hook_event_name": name, **fields}, env)
        assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")
    _send(env, base, "SessionEnd", reason="other")
    assert validate_trace(read_jsonl(DataDir(data).trace_path("s-live-8"))) == []


def test_a_transcript_path_that_is_a_fifo_does_not_hang_the_hook(tmp_path: Path) -> None:
    env, base, data = _session(tmp_path, "s-live-9")
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    _send(env, {**base, "transcript_path": str(fifo)}, "UserPromptSubmit", prompt="hello")
    _send(env, base, "SessionEnd", reason="other")
    assert [r["text"] for r in read_jsonl(DataDir(data).trace_path("s-live-9")) if r["ev"] == "input"] == ["hello"]


def test_parallel_hooks_of_one_session_have_one_writer(tmp_path: Path) -> None:
    """Claude Code runs a turn's hooks at once: every event lands, once, in a well-formed trace."""
    from capture_helpers import HOOK

    env, base, data = _session(tmp_path, "s-live-10")
    _send(env, base, "UserPromptSubmit", prompt="run everything")
    procs = []
    for i in range(6):
        call = {"tool_name": "Bash", "tool_use_id": f"toolu_p{i}", "tool_input": {"command": f"echo {i}"}}
        for name, extra in (("PreToolUse", {}),
                            ("PostToolUse", {"tool_response": {"stdout": f"{i}\n", "stderr": ""}})):
            procs.append(subprocess.Popen([HOOK, "claude_code"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, env=env))
            procs[-1].stdin.write(orjson.dumps({**base, "hook_event_name": name, **call, **extra}))  # type: ignore[union-attr]
            procs[-1].stdin.close()  # type: ignore[union-attr]
    for p in procs:
        assert p.wait(timeout=120) == 0 and p.stdout.read() == b"" and p.stderr.read() == b""  # type: ignore[union-attr]
    _send(env, base, "Stop", last_assistant_message="all ran")
    _send(env, base, "SessionEnd", reason="other")
    trace = read_jsonl(DataDir(data).trace_path("s-live-10"))
    assert validate_trace(trace) == []
    assert sorted(r["call_id"] for r in trace if r["ev"] == "tool_result") == [f"toolu_p{i}" for i in range(6)]
    assert all(r["input"] is not None for r in trace if r["ev"] == "tool_result")
    assert not (data / "live" / "errors.log").exists()


def test_a_hostile_session_id_stays_inside_the_data_folder(tmp_path: Path) -> None:
    env, base, data = _session(tmp_path, "s-live-11")
    base = {**base, "session_id": "../../escape"}
    _send(env, base, "UserPromptSubmit", prompt="hi")
    _send(env, base, "SessionEnd", reason="other")
    [trace] = list((data / "traces").iterdir())
    # Not an id: the core keeps it as redacted-<digest> (host/ids.py), the same for every event of the session.
    from rematch_trace.host.ids import clean_id

    assert trace.name == f"{clean_id('../../escape')}.jsonl" and read_jsonl(trace)[0]["session_id"] == clean_id(
        "../../escape")
    assert not (tmp_path / "escape.jsonl").exists() and not (data.parent / "escape.json").exists()
