"""The plugin end to end through the core: the traces its records lead to."""

from __future__ import annotations

import json
from pathlib import Path

from cc_fixtures import SID, Lines, call, evs, session_path, synthesize, text, write

import rematch_claude_code as plugin
from rematch_trace.testing import check_plugin, validate_trace


def _mark(cls: str, spelling: str = "/rematch-mark") -> str:
    return f"<command-name>{spelling}</command-name>\n<command-args>{cls} it edited the wrong file</command-args>"


def test_a_session_becomes_a_valid_trace_with_the_rules_applied(tmp_path: Path) -> None:
    b = Lines()
    lines = [
        b.user("add a test"),
        b.assistant("m1", text("on it")),
        b.assistant(
            "m1",
            call("toolu_1", "Edit", {"file_path": "a.py"}),
            usage={"input_tokens": 5, "output_tokens": 40},
        ),
        b.result(
            "toolu_1",
            "The user doesn't want to proceed with this tool use.",
            is_error=True,
            detail="User rejected tool use",
        ),
        b.user([text("[Request interrupted by user for tool use]")]),
        b.user("use the other file"),
        b.assistant("m2", call("toolu_2", "Skill", {"skill": "tdd"}), model="claude-opus-4-6"),
        b.result("toolu_2", "Launching skill: tdd"),
        b.assistant("m3", text("done"), model="claude-opus-4-6", stop="end_turn"),
        b.user(_mark("correction", "/rematch:rematch-mark")),
        b.user("<command-name>/clear</command-name>"),
    ]
    [s] = synthesize(write(session_path(tmp_path), lines))
    assert validate_trace(s.records) == []
    start = s.records[0]
    assert (start["session_id"], start["agent"]["kind"], start["mode"]) == (SID, "main", "import")
    assert start["model"] == {"provider": "anthropic", "id": "claude-sonnet-4-5-20250929"}
    inputs = evs(s, "input")
    assert [(i["text"], i["prelabel"]) for i in inputs] == [
        ("add a test", "none"),
        ("use the other file", "interrupt"),
        ("/rematch mark correction it edited the wrong file", "mark:correction"),
    ]
    assert inputs[1]["skills_invoked"] == ["tdd"]
    results = evs(s, "tool_result")
    assert [(r["tool"], r["is_error"], r["error_class"]) for r in results] == [
        ("Edit", True, "rejected"),
        ("Skill", False, None),
    ]
    turns = evs(s, "turn_end")
    assert len(turns) == 3
    assert turns[0]["usage"]["output"] == 40 and turns[0]["usage"]["totalTokens"] == 45
    [change] = evs(s, "model_change")
    assert change["to"]["id"] == "claude-opus-4-6"


def test_reimporting_a_file_gives_identical_traces(tmp_path: Path) -> None:
    b = Lines()
    root = b.user("sub task")
    root.update(isSidechain=True, parentUuid=None)
    lines = [
        b.user("go"),
        b.assistant("m1", call("toolu_1", "Task", {"prompt": "p"})),
        root,
        b.result("toolu_1", "sub done"),
        b.assistant("m2", text("done")),
    ]
    path = write(session_path(tmp_path), lines)
    first = synthesize(path)
    second = synthesize(path)
    assert [s.session_id for s in first] == [SID, f"{SID}.sidechain-1"]
    assert [s.agent_kind for s in first] == ["main", "sub"]
    assert [json.dumps(s.records) for s in first] == [json.dumps(s.records) for s in second]


def test_lone_surrogates_in_a_line_do_not_break_the_import(tmp_path: Path) -> None:
    b = Lines()
    bad = json.dumps(
        b.assistant("m1", text("bad \ud800 text"), call("toolu_1", "Bash", {"command": "echo \udc00"}))
    )
    path = write(session_path(tmp_path), [b.user("go"), bad])
    [s] = synthesize(path)
    assert [r["ev"] for r in s.records] == [
        "session_start",
        "input",
        "turn_end",
        "agent_end",
        "session_shutdown",
    ]


def test_plugin_contract_over_every_fixture_shape(tmp_path: Path) -> None:
    b = Lines()
    sub = b.user("Warmup")
    sub.update(isSidechain=True, agentId="90fa40b6")
    project = tmp_path / "projects" / "-work-project"
    paths = [
        write(project / f"{SID}.jsonl", [b.user("hi"), b.assistant("m1", text("hello"))]),
        write(project / "agent-90fa40b6.jsonl", [sub, b.assistant("m2", text("ready"))]),
        write(project / SID / "subagents" / "agent-a1.jsonl", [sub, b.assistant("m3", text("ready"))]),
    ]
    sessions = check_plugin(plugin, paths, hint="claude_code")
    assert [(s.session_id, s.agent_kind) for s in sessions] == [
        (SID, "main"),
        (f"{SID}.agent-90fa40b6", "sub"),
        (f"{SID}.agent-a1", "sub"),
    ]
