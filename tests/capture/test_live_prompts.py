"""Which submitted prompts are inputs, live, and with which text: as the import reads the transcript.

Found by the harness rig (tests/harness) against Claude Code 2.1.328: a background subagent's
``<task-notification>`` arrives through ``UserPromptSubmit`` and became a typed input, and a custom
slash command's run lost its request (the import keeps the command's arguments as the input).
Driven through the installed hook command, one process per event.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from capture_helpers import hook_env, make_repo, read_jsonl, run_hook

from rematch_trace.store.datafolder import DataDir

SID = "5d0a9e61-3c2b-4f7e-8a1d-2b3c4d5e6f70"


def _inputs(tmp_path: Path, prompts: list[str], commands: dict[str, str] | None = None,
            config_commands: dict[str, str] | None = None) -> list[tuple[str, str, list[str]]]:
    """Each prompt submitted then stopped; the inputs of the live trace (text, source, skills)."""
    project = make_repo(tmp_path / "project")
    for name, body in (commands or {}).items():
        path = project / ".claude" / "commands" / f"{name.replace(':', '/')}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    config = tmp_path / "claude-config"
    for name, body in (config_commands or {}).items():
        (config / "commands").mkdir(parents=True, exist_ok=True)
        (config / "commands" / f"{name}.md").write_text(body)
    transcript = config / "projects" / "-project" / f"{SID}.jsonl"
    data = tmp_path / "data"
    env = hook_env(tmp_path, data, SID, project)
    base: dict[str, Any] = {"session_id": SID, "transcript_path": str(transcript), "cwd": str(project)}

    def send(name: str, **fields: Any) -> None:
        res = run_hook({**base, "hook_event_name": name, **fields}, env)
        assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")

    send("SessionStart", source="startup")
    for p in prompts:
        send("UserPromptSubmit", prompt=p)
        send("Stop", last_assistant_message="Done.")
    send("SessionEnd", reason="other")
    trace = read_jsonl(DataDir(data).trace_path(SID))
    return [(r["text"], r["source"], r["skills_invoked"]) for r in trace if r["ev"] == "input"]


def test_a_task_notification_is_not_an_input(tmp_path: Path) -> None:
    """Claude Code submits a finished background task's notification itself: nobody typed it."""
    note = ("<task-notification>\n<task-id>a6bfe98c30f46b702</task-id>\n<status>completed</status>\n"
            "<summary>Agent \"Look around\" finished</summary>\n</task-notification>")
    assert _inputs(tmp_path, ["look around", note, "thanks"]) == [
        ("look around", "prompt", []), ("thanks", "prompt", [])]


def test_a_custom_command_is_its_arguments_and_names_itself(tmp_path: Path) -> None:
    """``/rig-cmd alpha`` (a project command), ``/team:ship now`` (namespaced), ``/mine`` (the
    config folder's): the arguments are the input, the command its skill, as on import."""
    got = _inputs(tmp_path, ["/rig-cmd alpha", "/team:ship now", "/mine"],
                  commands={"rig-cmd": "Run with $ARGUMENTS\n", "team:ship": "Ship $ARGUMENTS\n"},
                  config_commands={"mine": "Mine\n"})
    assert got == [("alpha", "prompt", ["rig-cmd"]), ("now", "prompt", ["team:ship"]), ("", "prompt", ["mine"])]


def test_built_in_and_unknown_commands_and_marks_stay_as_typed(tmp_path: Path) -> None:
    """No command file: a built-in (dropped by the core); a mark stays a mark; a path-like name is no command."""
    got = _inputs(tmp_path, ["/help", "/rematch-mark scope too wide", "/../../etc/passwd x"],
                  commands={"rig-cmd": "x\n"})
    assert got == [("/rematch mark scope too wide", "prompt", [])]
