"""The Codex translation rules, one small fixture per rule."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from codex_fixtures import (
    MODEL,
    PARENT,
    SID,
    Lines,
    of,
    raw_records,
    rollout_path,
    run,
    source_of,
    split_run,
    translate,
    turn_id,
    usage,
    write,
)

from rematch_codex import translate as tr
from rematch_trace.errors import RestartImport
from rematch_trace.host.source import RawRecord
from rematch_trace.host.vocab import (
    AssistantMessage,
    Compaction,
    EntryLoaded,
    Instructions,
    PermissionMode,
    Session,
    SkillInvoked,
    ToolResult,
    TurnStarted,
    UserMessage,
)
from rematch_trace.store.states import state_dumps, state_loads

# -- line generations ------------------------------------------------------------------------


def test_legacy_lines_without_envelope(tmp_path: Path) -> None:
    lines = [
        {"id": SID, "timestamp": "2025-08-06T18:02:11.653Z", "instructions": "# Repo rules\nBe nice.", "git": {}},
        {"record_type": "state"},
        {"type": "message", "id": None, "role": "user", "content": [{"type": "input_text", "text": "fix it"}]},
        {"record_type": "state"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": None},
        {"type": "function_call", "id": "fc_1", "name": "shell", "arguments": '{"command":["ls"]}', "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": '{"output":"a\\n","metadata":{"exit_code":0}}'},
        {"type": "message", "id": None, "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
    ]
    recs = run(tmp_path, lines)
    assert isinstance(recs[0], Session) and recs[0].session_id == SID and recs[0].t is not None
    assert [r.text for r in of(recs, Instructions)] == ["# Repo rules\nBe nice."]
    assert [r.text for r in of(recs, UserMessage)] == ["fix it"]
    msgs = of(recs, AssistantMessage)
    assert [len(m.tool_calls) for m in msgs] == [1, 0]
    assert msgs[0].tool_calls[0].input == {"command": ["ls"]}
    assert msgs[0].model is None and msgs[0].usage is None  # legacy files name no model, count no tokens
    assert [r.is_error for r in of(recs, ToolResult)] == [False]


def test_envelope_turn(tmp_path: Path) -> None:
    b = Lines()
    lines = [
        b.meta(),
        b.turn_context(),
        b.user("hello"),
        b.reasoning(),
        b.assistant("hi there"),
        b.tokens(usage(100, 40, 10)),
    ]
    recs = run(tmp_path, lines)
    assert isinstance(recs[0], Session)
    assert recs[0].cwd == "/work/repo" and recs[0].harness_version == "0.120.0" and recs[0].agent_kind == "main"
    (msg,) = of(recs, AssistantMessage)
    assert msg.text == "hi there"
    assert msg.model is not None and (msg.model.provider, msg.model.id) == ("openai", MODEL)
    assert msg.usage is not None
    assert (msg.usage.input, msg.usage.cache_read, msg.usage.output, msg.usage.total) == (60, 40, 10, 110)


def test_newer_extras_and_unknown_types_are_counted_not_fatal(tmp_path: Path) -> None:
    b = Lines()
    lines = [
        b.env("session_meta", {"id": SID, "history_mode": "paginated"}, ordinal=0),
        b.env("world_state", {"full": True, "state": {}}, ordinal=1),
        b.env("security_risk_score", {"scores": {}}, ordinal=2),
        b.env("brand_new_line_type", {"x": 1}, ordinal=3),
        {**b.user("typed"), "ordinal": 4, "metadata": {"client_authored": True}},
        b.item("brand_new_item"),
        b.env("response_item", "not an object"),
        b.item("message", role="user", content="not a list"),
        b.item("function_call_output", call_id=None, output=5),
        b.event("token_count", info="junk"),
        b.event("exec_command_end", call_id=7, exit_code="x"),
        b.assistant("ok"),
    ]
    path = write(rollout_path(tmp_path), lines)
    state: dict = {}
    recs = translate(path, state)
    assert [r.text for r in of(recs, UserMessage)] == ["typed"]
    assert len(of(recs, AssistantMessage)) == 1
    assert state["unknown"] == 2  # the new line type and the new item type


# -- identity, resume, forks, subagents -----------------------------------------------------


def test_first_meta_is_identity_and_later_copies_are_metadata(tmp_path: Path) -> None:
    b = Lines()
    lines = [b.meta(cwd="/first"), b.user("one"), b.assistant("a"), b.meta(cwd="/second"), b.user("two")]
    recs = run(tmp_path, lines)
    sessions = of(recs, Session)
    assert len(sessions) == 1 and sessions[0].cwd == "/first"
    assert [r.text for r in of(recs, UserMessage)] == ["one", "two"]


def _forked_lines(b: Lines, *, turn_ids: bool = True) -> list[dict]:
    spawn = {"subagent": {"thread_spawn": {"parent_thread_id": PARENT, "depth": 1, "agent_role": "explorer"}}}
    parent_turn = {"turn_id": turn_id(-5000)} if turn_ids else {}
    return [
        b.meta(forked_from_id=PARENT, source=spawn, agent_nickname="Archimedes", agent_role="explorer"),
        b.meta(sid=PARENT, source="vscode"),
        b.event("task_started", **parent_turn),
        b.user("# AGENTS.md instructions for /work/repo\n\n<INSTRUCTIONS>\nrules\n</INSTRUCTIONS>"),
        b.turn_context(model="gpt-parent", **parent_turn),
        b.user("parent prompt"),
        b.event("user_message", message="parent prompt"),
        b.assistant("parent answer"),
        b.call("shell_command", {"command": "ls"}, "pc1"),
        b.tokens(usage(1000, 0, 100), usage(1000, 0, 100)),
        b.output("pc1", "Exit code: 1\nWall time: 1 seconds\nOutput:\n"),
        b.tokens(usage(1000, 0, 100), usage(1000, 0, 100)),  # replayed
    ]


def _own_lines(b: Lines, *, turn_ids: bool = True) -> list[dict]:
    own_turn = {"turn_id": turn_id(10)} if turn_ids else {}
    return [
        b.event("task_started", **own_turn),
        b.turn_context(model="gpt-child", **own_turn),
        b.user("child task"),
        b.tokens(usage(1000, 0, 100), usage(1000, 0, 100)),  # replayed baseline
        b.assistant("child answer"),
        b.call("shell_command", {"command": "pwd"}, "cc1"),
        b.tokens(usage(1500, 200, 130), usage(500, 200, 30)),
        b.output("cc1", "Exit code: 0\nWall time: 1 seconds\nOutput:\n/work\n"),
    ]


def test_subagent_fork_skips_copied_history(tmp_path: Path) -> None:
    b = Lines()
    recs = run(tmp_path, _forked_lines(b) + _own_lines(b))
    (session,) = of(recs, Session)
    assert session.agent_kind == "sub" and session.parent_session_id == PARENT
    assert session.agent_name == "explorer" and session.session_id == SID
    assert [r.text for r in of(recs, UserMessage)] == ["child task"]
    assert [r.call_id for r in of(recs, ToolResult)] == ["cc1"]
    (msg,) = of(recs, AssistantMessage)
    assert msg.text == "child answer" and msg.model is not None and msg.model.id == "gpt-child"
    # Only the child's own advance counts: 1630 - 1100.
    assert msg.usage is not None and msg.usage.total == 530 and msg.usage.cache_read == 200
    # Instructions inherited with the copy still describe what the child was offered.
    assert len(of(recs, Instructions)) == 1


def test_fork_without_turn_ids_ends_copy_after_a_time_gap(tmp_path: Path) -> None:
    b = Lines()
    lines = _forked_lines(b, turn_ids=False)
    b.gap(5000)
    lines += _own_lines(b, turn_ids=False)
    recs = run(tmp_path, lines)
    assert [r.text for r in of(recs, UserMessage)] == ["child task"]
    assert [r.call_id for r in of(recs, ToolResult)] == ["cc1"]


def test_spawn_handover_output_ends_the_copy(tmp_path: Path) -> None:
    b = Lines()
    lines = [
        b.meta(source={"subagent": {"thread_spawn": {"parent_thread_id": PARENT, "depth": 1}}}),
        b.meta(sid=PARENT),
        b.user("parent prompt"),
        b.call("spawn_agent", {"message": "go"}, "sp1"),
        b.output("sp1", "You are the newly spawned agent. The prior conversation history was forked."),
        b.user("now the child's own prompt"),
    ]
    recs = run(tmp_path, lines)
    assert [r.text for r in of(recs, UserMessage)] == ["now the child's own prompt"]
    assert of(recs, ToolResult) == []


def test_review_subagent_is_a_sub_session(tmp_path: Path) -> None:
    b = Lines()
    recs = run(tmp_path, [b.meta(source={"subagent": "review"}), b.user("review this")])
    (session,) = of(recs, Session)
    assert session.agent_kind == "sub" and session.agent_name == "review" and session.parent_session_id is None


# -- user text ---------------------------------------------------------------------------------


def test_only_typed_text_becomes_input(tmp_path: Path) -> None:
    b = Lines()
    lines = [
        b.meta(),
        b.user("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
        b.user("# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nDo X.\n</INSTRUCTIONS>"),
        b.user("<user_instructions>\nold style\n</user_instructions>"),
        b.user("<subagent_notification>\n{}\n</subagent_notification>"),
        b.user("<turn_aborted>\nThe user interrupted the previous turn on purpose.\n</turn_aborted>"),
        b.user("# Context from my IDE setup:\n\n## Open tabs:\n- a.ts\n\n## My request for Codex:\nfix the bug\n"),
        b.user("# Files mentioned by the user:\n\n## shot.png: /tmp/shot.png\n\n## My request for Codex:\nlook\n"),
        b.user("# Context from my IDE setup:\n\n## Open tabs:\n- a.ts\n"),
        b.message("developer", "<permissions instructions>\nsandboxed\n</permissions instructions>"),
        b.user("plain prompt"),
    ]
    recs = run(tmp_path, lines)
    assert [r.text for r in of(recs, UserMessage)] == ["fix the bug", "look", "plain prompt"]
    assert [r.text.split("\n")[0] for r in of(recs, Instructions)] == [
        "# AGENTS.md instructions for /w",
        "<user_instructions>",
    ]


def test_desktop_recommended_plugins_is_not_a_prompt(tmp_path: Path) -> None:
    """Codex Desktop injects a user-role ``<recommended_plugins>`` message that it never mirrors as
    ``user_message``: context, not a typed prompt (prompts are exactly the mirrored texts). So is
    any other text that is one snake_case tag's block, as Codex wraps what it injects."""
    b = Lines()
    lines = [
        b.meta(), b.turn_context(),
        b.user("<recommended_plugins>\n- github: Work with issues\n</recommended_plugins>"),
        b.user("<workspace_hint name=\"w\">\nsomething a client adds\n</workspace_hint>\n"),
        b.user("fix it"), b.event("user_message", message="fix it", images=[]), b.assistant("done"),
        b.user("<div>typed html</div>"), b.event("user_message", message="<div>typed html</div>", images=[]),
        b.assistant("ok"),
    ]
    recs = run(tmp_path, lines)
    assert [r.text for r in of(recs, UserMessage)] == ["fix it", "<div>typed html</div>"]


def test_prompts_recorded_only_as_user_message_events_are_inputs(tmp_path: Path) -> None:
    b = Lines()
    lines = [
        b.meta(), b.turn_context(),
        b.env("event_msg", {"type": "user_message", "message": "first prompt", "kind": "plain", "images": []}),
        b.assistant("one"),
        b.env("event_msg", {"type": "user_message", "message": "<environment_context>\n</environment_context>",
                            "kind": "environment_context"}),
        b.event("user_message", message="# Context from my IDE setup:\n\n## My request for Codex:\nsecond\n"),
        b.assistant("two"),
        # A prompt recorded both ways is one input.
        b.user("third"), b.event("user_message", message="third", images=[]), b.assistant("three"),
    ]
    recs = run(tmp_path, lines)
    assert [r.text for r in of(recs, UserMessage)] == ["first prompt", "second", "third"]
    kinds = [type(r).__name__ for r in recs if type(r).__name__ not in ("TurnStarted", "PermissionMode")]
    assert kinds == ["Session", "UserMessage", "AssistantMessage", "UserMessage", "AssistantMessage", "UserMessage",
                     "AssistantMessage"]


def test_turn_ids_and_permission_modes_are_passed_on(tmp_path: Path) -> None:
    b = Lines()
    t1, t2 = turn_id(5), turn_id(9)
    lines = [
        b.meta(),
        b.event("task_started", turn_id=t1), b.turn_context(turn_id=t1, approval_policy="on-request",
                                                            sandbox_policy={"type": "workspace-write"}),
        b.user("one"), b.assistant("a"),
        b.event("task_started", turn_id=t2), b.turn_context(turn_id=t2, approval_policy="on-request",
                                                            sandbox_policy={"type": "workspace-write"}),
        b.user("two"), b.assistant("b"),
        # v0.58 and before: the sandbox's tag was "mode"; no turn ids yet.
        b.turn_context(approval_policy="never", sandbox_policy={"mode": "danger-full-access"}),
    ]
    recs = run(tmp_path, lines)
    assert [r.turn_id for r in of(recs, TurnStarted)] == [t1, t2]
    assert [r.mode for r in of(recs, PermissionMode)] == ["on-request/workspace-write", "never/danger-full-access"]
    kinds = [type(r).__name__ for r in recs]
    assert kinds[:5] == ["Session", "TurnStarted", "PermissionMode", "UserMessage", "AssistantMessage"]


def test_image_only_prompt_is_an_input(tmp_path: Path) -> None:
    b = Lines()
    content = [
        {"type": "input_text", "text": "<image name=[Image #1]>"},
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
        {"type": "input_text", "text": "</image>"},
    ]
    recs = run(tmp_path, [b.meta(), b.item("message", role="user", content=content)])
    assert [r.text for r in of(recs, UserMessage)] == [""]


def test_skills_catalog_in_developer_message_is_instructions(tmp_path: Path) -> None:
    b = Lines()
    catalog = "<skills_instructions>\n## Skills\n### Available skills\n- a: b (file: /s/a/SKILL.md)\n</skills_instructions>"
    recs = run(tmp_path, [b.meta(), b.message("developer", "<permissions instructions>x", catalog)])
    assert [r.text for r in of(recs, Instructions)] == [catalog]


def test_loaded_skill_becomes_entry_with_version_and_sha(tmp_path: Path) -> None:
    b = Lines()
    content = "---\nname: pdf\ndescription: PDFs\nversion: 1.2.0\n---\n# PDF\nUse it."
    injected = f"<skill>\n<name>pdf</name>\n<path>/nowhere/pdf/SKILL.md</path>\n{content}\n</skill>"
    recs = run(tmp_path, [b.meta(), b.user("$pdf please"), b.user(injected)])
    assert [r.text for r in of(recs, UserMessage)] == ["$pdf please"]
    (entry,) = of(recs, EntryLoaded)
    assert (entry.id, entry.version) == ("pdf", "1.2.0")
    assert entry.sha == hashlib.sha256(content.encode()).hexdigest()
    assert [s.name for s in of(recs, SkillInvoked)] == ["pdf"]
    kinds = [type(r).__name__ for r in recs]
    assert kinds.index("UserMessage") < kinds.index("SkillInvoked")


def test_loaded_skill_version_from_rematch_json_beside_it(tmp_path: Path) -> None:
    skill_dir = tmp_path / "skills" / "lint"
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text("---\nname: lint\n---\nLint.")
    (skill_dir / "rematch.json").write_text('{"id": "lint", "version": "3.1"}')
    b = Lines()
    injected = f"<skill>\n<name>lint</name>\n<path>{skill_dir / 'SKILL.md'}</path>\n---\nname: lint\n---\nLint.\n</skill>"
    recs = run(tmp_path, [b.meta(), b.user("$lint"), b.user(injected)])
    (entry,) = of(recs, EntryLoaded)
    assert entry.version == "3.1"
    # No content_sha256 in the manifest: the sha of the content as injected.
    assert entry.sha == hashlib.sha256(b"---\nname: lint\n---\nLint.").hexdigest()
    # The skill file read into the context is an instruction file loaded.
    assert [(i.text, i.path) for i in of(recs, Instructions)] == [("", str(skill_dir / "SKILL.md"))]


def test_loaded_rematch_entry_takes_id_version_and_sha_from_its_manifest(tmp_path: Path) -> None:
    skill_dir = tmp_path / "skills" / "lint"
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text("---\nname: lint\n---\nLint.")
    sha = "AB" * 32
    (skill_dir / "rematch.json").write_text(f'{{"id": "team/lint", "version": 4, "content_sha256": "{sha}"}}')
    b = Lines()
    injected = f"<skill>\n<name>lint</name>\n<path>{skill_dir / 'SKILL.md'}</path>\n---\nname: lint\n---\nLint.\n</skill>"
    recs = run(tmp_path, [b.meta(), b.user("$lint"), b.user(injected)])
    (entry,) = of(recs, EntryLoaded)
    assert (entry.id, entry.version, entry.sha) == ("team/lint", "4", sha.lower())
    assert [s.name for s in of(recs, SkillInvoked)] == ["lint"]


def test_agents_md_instructions_name_their_file(tmp_path: Path) -> None:
    b = Lines()
    recs = run(tmp_path, [b.meta(), b.user("# AGENTS.md instructions for /w/repo\n\n<INSTRUCTIONS>\nx\n</INSTRUCTIONS>"),
                          b.user("# AGENTS.md instructions for C:\\Users\\u\\repo\n\n<INSTRUCTIONS>\n</INSTRUCTIONS>")])
    assert [i.path for i in of(recs, Instructions)] == ["/w/repo/AGENTS.md", "C:\\Users\\u\\repo\\AGENTS.md"]


def test_loaded_skill_without_version_anywhere(tmp_path: Path) -> None:
    b = Lines()
    injected = "<skill>\n<name>x</name>\n<path>/missing/x/SKILL.md</path>\nbody\n</skill>"
    (entry,) = of(run(tmp_path, [b.meta(), b.user(injected)]), EntryLoaded)
    assert entry.version is None and entry.sha == hashlib.sha256(b"body").hexdigest()


# -- aborts --------------------------------------------------------------------------------------


def test_turn_aborted_follows_the_interrupted_message(tmp_path: Path) -> None:
    b = Lines()
    lines = [
        b.meta(),
        b.event("task_started", turn_id="t1"),
        b.user("go"),
        b.assistant("working"),
        b.call("shell_command", {"command": "sleep 9"}, "c1"),
        b.tokens(usage(10, 0, 1)),
        b.output("c1", "Wall time: 2.0 seconds\naborted by user"),
        b.user("<turn_aborted>\nThe user interrupted the previous turn on purpose.\n</turn_aborted>"),
        b.event("turn_aborted", turn_id="t1", reason="interrupted"),
        b.event("task_started", turn_id="t2"),
        b.user("stop that"),
    ]
    recs = run(tmp_path, lines)
    kinds = [type(r).__name__ for r in recs if not isinstance(r, (Session, Instructions, TurnStarted, PermissionMode))]
    assert kinds == ["UserMessage", "AssistantMessage", "ToolResult", "Abort", "UserMessage"]
    (res,) = of(recs, ToolResult)
    assert (res.is_error, res.error_class) == (True, "interrupted")


def test_early_abort_event_waits_for_the_items_it_interrupted(tmp_path: Path) -> None:
    # v0.3x-0.4x: token_count and turn_aborted are written before the response's items.
    b = Lines()
    lines = [
        b.meta(),
        b.turn_context(),
        b.user("patch it"),
        b.turn_context(),
        b.tokens(usage(50, 0, 5)),
        b.event("turn_aborted", reason="interrupted"),
        b.reasoning(),
        b.call("shell", {"command": ["bash", "-lc", "apply_patch <<'P'\nP"]}, "c1"),
        b.output("c1", "patch rejected by user"),
        b.turn_context(),
        b.user("why?"),
    ]
    recs = run(tmp_path, lines)
    kinds = [type(r).__name__ for r in recs if not isinstance(r, (Session, Instructions, TurnStarted, PermissionMode))]
    assert kinds == ["UserMessage", "AssistantMessage", "ToolResult", "Abort", "UserMessage"]
    (msg,) = of(recs, AssistantMessage)
    assert msg.aborted and msg.usage is not None and msg.usage.total == 55
    assert of(recs, ToolResult)[0].error_class == "rejected"


# -- calls and results ---------------------------------------------------------------------------


def test_calls_pair_with_outputs_and_results_follow_their_message(tmp_path: Path) -> None:
    b = Lines()
    lines = [
        b.meta(),
        b.user("go"),
        b.reasoning(),
        b.assistant("running three"),
        b.call("exec_command", {"cmd": "ls"}, "f1"),
        b.custom("apply_patch", "*** Begin Patch\n*** End Patch", "p1"),
        b.item("local_shell_call", call_id="l1", status="completed", action={"type": "exec", "command": ["pwd"]}),
        b.tokens(usage(10, 0, 3)),
        b.output("f1", "Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 2\nOutput:\nno\n"),
        b.output("p1", "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess.", kind="custom_tool_call_output"),
        b.output("l1", '{"output":"/w\\n","metadata":{"exit_code":0,"duration_seconds":0.0}}'),
    ]
    recs = run(tmp_path, lines)
    (msg,) = of(recs, AssistantMessage)
    assert [(c.id, c.name) for c in msg.tool_calls] == [("f1", "exec_command"), ("p1", "apply_patch"), ("l1", "local_shell")]
    assert msg.tool_calls[1].input == "*** Begin Patch\n*** End Patch"
    results = of(recs, ToolResult)
    assert [(r.call_id, r.is_error, r.error_class) for r in results] == [
        ("f1", True, "exit_nonzero"),
        ("p1", False, None),
        ("l1", False, None),
    ]
    assert recs.index(msg) < recs.index(results[0])
    assert results[0].output_bytes == len(b"Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 2\nOutput:\nno\n")


def test_outputs_before_token_count_wait_inside_their_response(tmp_path: Path) -> None:
    # v0.14x: the output is written before the response's token_count.
    b = Lines()
    lines = [b.meta(), b.user("go"), b.call("exec_command", {"cmd": "ls"}, "f1")]
    lines += [b.output("f1", "Chunk ID: 1\nWall time: 0 seconds\nProcess exited with code 0\nOutput:\n")]
    lines += [b.tokens(usage(10, 0, 1)), b.reasoning(), b.assistant("done"), b.tokens(usage(30, 0, 2))]
    recs = run(tmp_path, lines)
    kinds = [type(r).__name__ for r in recs if not isinstance(r, Session)]
    assert kinds == ["UserMessage", "AssistantMessage", "ToolResult", "AssistantMessage"]
    assert [m.usage.total for m in of(recs, AssistantMessage) if m.usage] == [11, 21]


def test_items_between_outputs_form_one_message(tmp_path: Path) -> None:
    b = Lines()
    lines = [b.meta(), b.user("go")]
    for i in range(3):
        lines += [b.reasoning(), b.assistant(f"step {i}"), b.call("shell", {"command": ["true"]}, f"c{i}")]
        lines += [b.output(f"c{i}", '{"output":"","metadata":{"exit_code":0}}')]
    lines += [b.reasoning(), b.assistant("all done")]
    recs = run(tmp_path, lines)
    msgs = of(recs, AssistantMessage)
    assert [m.text for m in msgs] == ["step 0", "step 1", "step 2", "all done"]
    assert [len(m.tool_calls) for m in msgs] == [1, 1, 1, 0]


def test_web_search_is_a_call_with_its_own_result(tmp_path: Path) -> None:
    b = Lines()
    lines = [
        b.meta(),
        b.user("search"),
        b.reasoning(),
        b.item("web_search_call", status="completed", action={"type": "search", "query": "codex"}),
        b.reasoning(),
        b.item("web_search_call", status="failed", action={"type": "open_page", "url": "https://x"}),
        b.assistant("found"),
        b.tokens(usage(5, 0, 1)),
    ]
    recs = run(tmp_path, lines)
    (msg,) = of(recs, AssistantMessage)
    assert [c.name for c in msg.tool_calls] == ["web_search", "web_search"]
    assert [r.is_error for r in of(recs, ToolResult)] == [False, True]
    assert len({c.id for c in msg.tool_calls}) == 2


def test_structured_outcome_after_the_output_is_used_once(tmp_path: Path) -> None:
    b = Lines()
    lines = [
        b.meta(),
        b.user("go"),
        b.call("exec_command", {"cmd": "make"}, "e1"),
        b.tokens(usage(10, 0, 1)),
        b.output("e1", "Chunk ID: 1\nWall time: 1 seconds\nProcess running with session ID 5\nOutput:\n"),
        b.event("exec_command_end", call_id="e1", exit_code=2, status="failed"),
        b.reasoning(),
    ]
    recs = run(tmp_path, lines)
    (res,) = of(recs, ToolResult)
    assert (res.is_error, res.error_class) == (True, "exit_nonzero")


def test_structured_outcome_before_the_output(tmp_path: Path) -> None:
    b = Lines()
    lines = [
        b.meta(),
        b.user("go"),
        b.custom("apply_patch", "*** Begin Patch", "p1"),
        b.event("patch_apply_end", call_id="p1", success=False, stdout="", stderr="bad"),
        b.output("p1", "Exit code: 0\nWall time: 0 seconds\nOutput:\n", kind="custom_tool_call_output"),
        b.tokens(usage(10, 0, 1)),
        b.call("mcp__docs__search", {"q": "x"}, "m1"),
        b.event("mcp_tool_call_end", call_id="m1", result={"Err": "server gone"}),
        b.output("m1", "tool call error: tool call failed for `docs/search`"),
        b.tokens(usage(20, 0, 2)),
    ]
    recs = run(tmp_path, lines)
    assert [(r.call_id, r.is_error, r.error_class) for r in of(recs, ToolResult)] == [
        ("p1", True, "tool_error"),
        ("m1", True, None),
    ]


def test_exec_command_declined_is_rejected(tmp_path: Path) -> None:
    b = Lines()
    lines = [
        b.meta(),
        b.user("go"),
        b.call("exec_command", {"cmd": "rm -rf /"}, "e1"),
        b.output("e1", "exec command rejected by user"),
        b.event("exec_command_end", call_id="e1", status="declined"),
    ]
    (res,) = of(run(tmp_path, lines), ToolResult)
    assert (res.is_error, res.error_class) == (True, "rejected")


def test_output_without_a_call_still_reports(tmp_path: Path) -> None:
    b = Lines()
    recs = run(tmp_path, [b.meta(), b.user("go"), b.output("ghost", "Exit code: 3\nOutput:\n")])
    (res,) = of(recs, ToolResult)
    assert res.call_id == "ghost" and res.is_error and res.tool is None


def test_namespaced_calls_keep_their_namespace(tmp_path: Path) -> None:
    b = Lines()
    call = b.call("read", {"package": "pdf"}, "s1")
    call["payload"]["namespace"] = "skills"
    mcp = b.call("search", {"q": 1}, "m1")
    mcp["payload"]["namespace"] = "mcp__docs__"
    recs = run(tmp_path, [b.meta(), b.user("go"), call, mcp, b.tokens(usage(1, 0, 1))])
    (msg,) = of(recs, AssistantMessage)
    assert [c.name for c in msg.tool_calls] == ["skills.read", "mcp__docs__search"]
    assert [s.name for s in of(recs, SkillInvoked)] == ["pdf"]


# -- tokens and models ------------------------------------------------------------------------------


def test_token_totals_that_do_not_advance_are_skipped(tmp_path: Path) -> None:
    b = Lines()
    lines = [b.meta(), b.user("a"), b.assistant("1"), b.tokens(usage(100, 0, 10), usage(100, 0, 10))]
    lines += [b.tokens(usage(100, 0, 10), usage(100, 0, 10)), b.tokens(None)]
    lines += [b.user("b"), b.tokens(usage(100, 0, 10), usage(100, 0, 10))]
    lines += [b.assistant("2"), b.tokens(usage(250, 50, 20), usage(150, 50, 10))]
    recs = run(tmp_path, lines)
    assert [(m.usage.input, m.usage.cache_read, m.usage.output) for m in of(recs, AssistantMessage) if m.usage] == [
        (100, 0, 10),
        (100, 50, 10),
    ]


def test_rolled_back_or_missing_totals_fall_back_to_last_usage(tmp_path: Path) -> None:
    b = Lines()
    lines = [b.meta(), b.user("a"), b.assistant("1"), b.tokens(usage(500, 0, 50), usage(500, 0, 50))]
    lines += [b.assistant("2"), b.tokens(usage(40, 0, 4), usage(40, 0, 4))]  # restarted counter
    lines += [b.assistant("3"), b.tokens(None, usage(7, 0, 1))]  # no totals
    lines += [b.tokens(None, usage(7, 0, 1))]  # the same again: a repeat
    lines += [b.assistant("4"), b.tokens(usage(60, 0, 6), usage(16, 0, 1))]
    recs = run(tmp_path, lines)
    totals = [m.usage.total if m.usage else None for m in of(recs, AssistantMessage)]
    assert totals == [550, 44, 8, 22]


def test_token_count_before_items_belongs_to_the_next_response(tmp_path: Path) -> None:
    b = Lines()
    lines = [b.meta(), b.turn_context(), b.user("a"), b.turn_context(), b.tokens(usage(10, 0, 1))]
    lines += [b.reasoning(), b.call("shell", {"command": ["ls"]}, "c1"), b.output("c1", "{}"), b.turn_context()]
    lines += [b.tokens(usage(30, 0, 3)), b.reasoning(), b.assistant("done"), b.turn_context()]
    recs = run(tmp_path, lines)
    assert [(m.text, m.usage.total if m.usage else 0) for m in of(recs, AssistantMessage)] == [("", 11), ("done", 22)]


def test_model_follows_the_latest_turn_context(tmp_path: Path) -> None:
    b = Lines()
    lines = [b.meta(model_provider="azure"), b.turn_context(model="m1"), b.user("a"), b.assistant("1")]
    lines += [b.turn_context(model="m2"), b.user("b"), b.assistant("2")]
    msgs = of(run(tmp_path, lines), AssistantMessage)
    assert [(m.model.provider, m.model.id) for m in msgs if m.model] == [("azure", "m1"), ("azure", "m2")]


def test_compaction(tmp_path: Path) -> None:
    b = Lines()
    lines = [b.meta(), b.user("a"), b.env("compacted", {"message": "", "replacement_history": []}), b.user("b")]
    recs = run(tmp_path, lines)
    assert len(of(recs, Compaction)) == 1 and len(of(recs, UserMessage)) == 2


# -- resume -----------------------------------------------------------------------------------------


def _mixed_lines() -> list[dict]:
    b = Lines()
    lines = _forked_lines(b) + _own_lines(b)
    lines += [
        b.call("exec_command", {"cmd": "make"}, "e1"),
        b.output("e1", "Chunk ID: 1\nWall time: 1 seconds\nProcess running with session ID 5\nOutput:\n"),
        b.event("exec_command_end", call_id="e1", exit_code=1, status="failed"),
        b.tokens(usage(2000, 300, 200), usage(430, 100, 70)),
        b.user("<skill>\n<name>k</name>\n<path>/p/SKILL.md</path>\nK\n</skill>"),
        b.event("turn_aborted", reason="interrupted"),
        b.turn_context(model="gpt-other"),
        b.user("again"),
        b.reasoning(),
        b.item("web_search_call", status="completed", action={"type": "search"}),
        b.assistant("end"),
    ]
    return lines


def test_resume_at_every_line_matches_a_full_import(tmp_path: Path) -> None:
    path = write(rollout_path(tmp_path), _mixed_lines())
    source = source_of(path)
    records = raw_records(path)
    full = translate(path)
    for cut in range(len(records) + 1):
        assert split_run(source, records, cut) == full, f"differs when paused after {cut} records"


def test_state_stays_json(tmp_path: Path) -> None:
    path = write(rollout_path(tmp_path), _mixed_lines())
    state: dict = {}
    translate(path, state)
    assert orjson.loads(orjson.dumps(state)) == state


def test_a_rewritten_file_restarts_the_import(tmp_path: Path) -> None:
    b = Lines()
    path = write(rollout_path(tmp_path), [b.meta(), b.user("a")])
    state: dict = {}
    translate(path, state)
    with pytest.raises(RestartImport):
        list(tr.translate(source_of(path), iter(raw_records(path)), state))


@pytest.mark.parametrize("changed", ["keep the key", "output here"])
def test_a_changed_sealed_line_restarts_the_import(tmp_path: Path, changed: str) -> None:
    """A line an open response's value is read again from, changed in place (same length): read whole."""
    b = Lines()
    lines = [b.meta(), b.user("go"), b.assistant("keep the key"), b.call("shell", {"command": ["ls"]}, "c1"),
             b.output("c1", "output here")]
    path = write(rollout_path(tmp_path), lines)
    records = raw_records(path)
    state: dict = {}
    snapshot: dict = {}

    def feed() -> Iterator[RawRecord]:
        yield from records
        snapshot.update(state_loads(state_dumps(state)))  # as the core saves it, before the final flush

    for _ in tr.translate(source_of(path), feed(), state):
        pass
    assert b'"at":' in state_dumps(snapshot)
    body = path.read_bytes()
    assert body.count(changed.encode()) == 1
    path.write_bytes(body.replace(changed.encode(), changed[::-1].encode()) + orjson.dumps(b.assistant("more")) + b"\n")
    grown = raw_records(path, records[-1].end)
    with pytest.raises(RestartImport):
        list(tr.translate(source_of(path), iter(grown), state_loads(state_dumps(snapshot))))
    # Unchanged, the same saved state continues.
    path.write_bytes(body + orjson.dumps(b.assistant("more")) + b"\n")
    assert list(tr.translate(source_of(path), iter(raw_records(path, records[-1].end)), state_loads(state_dumps(snapshot))))


def test_session_without_meta_takes_its_id_from_the_file_name(tmp_path: Path) -> None:
    b = Lines()
    other = "019a0000-9999-7000-8000-000000000009"
    path = rollout_path(tmp_path).with_name(f"rollout-2026-01-01T00-00-00-{SID}_{other}.jsonl")
    context = b.user("<environment_context>\n</environment_context>")
    recs = translate(write(path, [context, b.meta(sid=other), b.user("typed")]))
    (session,) = of(recs, Session)
    assert session.session_id == SID
    # A meta arriving after the session opened is its own, not the start of a copied history.
    assert [r.text for r in of(recs, UserMessage)] == ["typed"]


def test_abort_while_the_response_is_open_marks_it_aborted(tmp_path: Path) -> None:
    b = Lines()
    lines = [b.meta(), b.user("go"), b.reasoning(), b.assistant("half an ans"), b.event("turn_aborted", reason="interrupted")]
    lines += [b.user("no, stop")]
    recs = run(tmp_path, lines)
    (msg,) = of(recs, AssistantMessage)
    assert msg.aborted and msg.text == "half an ans"
    kinds = [type(r).__name__ for r in recs if not isinstance(r, Session)]
    assert kinds == ["UserMessage", "AssistantMessage", "Abort", "UserMessage"]
