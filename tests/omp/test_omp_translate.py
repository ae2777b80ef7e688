"""The omp translator, one rule per test, on small session files written here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from omp_build import (
    CWD,
    SID,
    Tree,
    assistant,
    header,
    neutral,
    read,
    result,
    source_of,
    title_slot,
    translate,
    user,
    write,
)

from rematch_trace.errors import RestartImport
from rematch_trace.host.vocab import (
    AssistantMessage,
    Compaction,
    Instructions,
    ModelRef,
    Session,
    SkillInvoked,
    ToolResult,
    Usage,
    UserMessage,
)


def of(records: list[Any], kind: type) -> list[Any]:
    return [r for r in records if isinstance(r, kind)]


def session_file(tmp_path: Path, tree: Tree, **header_extra: Any) -> Path:
    return write(tmp_path / "s" / "-proj" / f"2026-08-21T14-02-10-500Z_{SID}.jsonl", [title_slot(), header(**header_extra), *tree.entries])


def test_header_becomes_the_session_and_the_title_slot_is_skipped(tmp_path: Path) -> None:
    t = Tree()
    t.msg(user("hello"))
    out = neutral(session_file(tmp_path, t))
    assert isinstance(out[0], Session)
    s = out[0]
    assert (s.session_id, s.cwd, s.agent_kind, s.harness_version) == (SID, CWD, "main", None)
    assert s.t == 1787320930500  # 2026-08-21T14:02:10.500Z
    assert len(of(out, Session)) == 1
    assert [u.text for u in of(out, UserMessage)] == ["hello"]


def test_runtime_version_of_a_record_reaches_the_session(tmp_path: Path) -> None:
    t = Tree()
    t.add("custom", customType="x", runtime={"version": "18.2.0"})
    t.msg(user("hi"))
    out = neutral(session_file(tmp_path, t))
    versions = [s.harness_version for s in of(out, Session)]
    assert versions[0] is None and "18.2.0" in versions
    t2 = Tree()
    t2.msg(user("hi"))
    out2 = neutral(session_file(tmp_path / "b", t2, runtime={"version": "17.0.1"}))
    assert of(out2, Session)[0].harness_version == "17.0.1"


def test_only_messages_a_person_typed_are_user_messages(tmp_path: Path) -> None:
    t = Tree()
    t.msg(user("typed", attribution="user"))
    t.msg(user("legacy without attribution"))
    t.msg(user("task prompt", attribution="agent"))
    t.msg(user("injected", synthetic=True))
    t.msg({"role": "developer", "content": [{"type": "text", "text": "continue"}], "attribution": "user"})
    t.msg({"role": "user", "content": "plain string content"})
    texts = [u.text for u in of(neutral(session_file(tmp_path, t)), UserMessage)]
    assert texts == ["typed", "legacy without attribution", "plain string content"]


def test_slash_bang_and_percent_lines_pass_through_for_the_core_to_drop(tmp_path: Path) -> None:
    t = Tree()
    t.msg(user("/mode"))
    t.msg({"role": "bashExecution", "command": "redis-cli ping", "output": "PONG", "exitCode": 0})
    t.msg({"role": "pythonExecution", "code": "print(1)", "output": "1", "exitCode": 0})
    texts = [u.text for u in of(neutral(session_file(tmp_path, t)), UserMessage)]
    assert texts == ["/mode", "!redis-cli ping", "%print(1)"]


def test_skill_prompt_is_a_user_skill_invocation_unless_the_agent_loaded_it(tmp_path: Path) -> None:
    rendered = "[IMPORTANT: User invoked the \"redis\" skill]\n\n# Redis\n\n---\n\n[Skill directory: /s]\nUser: use redis"
    t = Tree()
    t.add("custom_message", customType="skill-prompt", content=rendered, display=True,
          details={"name": "redis", "path": "/s/SKILL.md", "args": "use redis now"}, attribution="user")
    t.add("custom_message", customType="skill-prompt", content=rendered, display=True,
          details={"name": "redis", "path": "/s/SKILL.md"}, attribution="user")
    t.add("custom_message", customType="skill-prompt", content="body", display=True,
          details={"name": "auto-skill"}, attribution="agent")
    t.add("custom_message", customType="async-result", content="done", display=True, attribution="user")
    out = neutral(session_file(tmp_path, t))
    users = of(out, UserMessage)
    assert [(u.text, u.skills) for u in users] == [("use redis now", ("redis",)), ("use redis", ("redis",))]
    assert [s.name for s in of(out, SkillInvoked)] == ["auto-skill"]


def test_old_omp_skill_user_message_carries_the_skill(tmp_path: Path) -> None:
    t = Tree()
    t.msg(user("# Body\n\ndo things\n\n---\n\nSkill: /home/u/.omp/agent/skills/deploy/SKILL.md\nUser: ship it"))
    (u,) = of(neutral(session_file(tmp_path, t)), UserMessage)
    assert (u.text, u.skills) == ("ship it", ("deploy",))


def test_assistant_message_fields(tmp_path: Path) -> None:
    t = Tree()
    t.msg(assistant("Let me look.", calls=[("c1", "read", {"path": "a.ts"}), ("c2", "bash", {"command": "ls"})], stop="toolUse"))
    (a,) = of(neutral(session_file(tmp_path, t)), AssistantMessage)
    assert a.model == ModelRef("anthropic", "claude-opus-4-5")
    assert a.usage == Usage(input=10, output=5, cache_read=100, cache_write=7, total=122, cost=0.3)
    assert (a.stop_reason, a.aborted, a.text) == ("toolUse", False, "Let me look.")
    assert [(c.id, c.name, c.input) for c in a.tool_calls] == [("c1", "read", {"path": "a.ts"}), ("c2", "bash", {"command": "ls"})]


def test_missing_total_tokens_is_the_sum_and_bad_numbers_are_zero(tmp_path: Path) -> None:
    t = Tree()
    t.msg(assistant("x", usage={"input": 3, "output": "lots", "cacheRead": 4, "cacheWrite": None, "cost": {"total": True}}))
    (a,) = of(neutral(session_file(tmp_path, t)), AssistantMessage)
    assert a.usage == Usage(input=3, output=0, cache_read=4, cache_write=0, total=7, cost=None)


def test_aborted_assistant_is_marked_aborted(tmp_path: Path) -> None:
    t = Tree()
    t.msg(assistant("", stop="aborted", errorMessage="Interrupted by user"))
    t.msg(assistant("", stop="error", errorMessage="terminated"))
    a, b = of(neutral(session_file(tmp_path, t)), AssistantMessage)
    assert (a.aborted, a.stop_reason) == (True, "aborted")
    assert (b.aborted, b.stop_reason) == (False, "error")


def test_tool_result_fields(tmp_path: Path) -> None:
    t = Tree()
    t.msg(assistant(calls=[("c1", "grep", {"pattern": "("})], stop="toolUse"))
    t.msg(result("c1", "regex parse error: é", is_error=True, tool="grep"))
    t.msg(result("c2", "x" * 10000, tool="read"))
    t.msg({"role": "toolResult", "toolName": "read", "content": [], "isError": False})  # no call id: unusable
    r1, r2 = of(neutral(session_file(tmp_path, t)), ToolResult)
    assert (r1.call_id, r1.tool, r1.is_error, r1.error_class) == ("c1", "grep", True, None)
    assert r1.output_bytes == len("regex parse error: é".encode()) and r1.output_head == "regex parse error: é"
    assert (r2.call_id, r2.is_error, r2.output_bytes, len(r2.output_head)) == ("c2", False, 10000, 4096)


def test_structural_error_classes(tmp_path: Path) -> None:
    t = Tree()
    t.msg(result("b1", "x" * 6000 + "\n\nCommand exited with code 2", is_error=True, tool="bash"))
    t.msg(result("b2", "Command aborted", is_error=True, tool="bash"))
    t.msg(result("w1", "Tool execution was aborted.", is_error=True, tool="write",
                 details={"__synthetic": True, "source": "assistant_stop_aborted", "executed": False}))
    t.msg(result("w2", "Tool call was not executed because the turn failed", is_error=True, tool="write",
                 details={"__synthetic": True, "source": "assistant_stop_error", "executed": False}))
    t.msg(result("b3", "Command exited with code 1", is_error=False, tool="bash"))
    classes = [r.error_class for r in of(neutral(session_file(tmp_path, t)), ToolResult)]
    assert classes == ["exit_nonzero", "interrupted", "interrupted", None, None]


def test_compaction_and_subagent_prompt(tmp_path: Path) -> None:
    t = Tree()
    t.add("session_init", systemPrompt=["You are scout.", "Skills: a, b"], task="find", tools=["read"], agent="scout")
    t.add("compaction", summary="s", firstKeptEntryId="e0000001", tokensBefore=10, method="soft")
    out = neutral(session_file(tmp_path, t))
    assert [i.text for i in of(out, Instructions)] == ["You are scout.\nSkills: a, b"]
    assert [c.trigger for c in of(out, Compaction)] == ["soft"]


def test_only_the_active_branch_reaches_the_translator(tmp_path: Path) -> None:
    t = Tree()
    t.msg(user("fix the bug"))
    a1 = t.msg(assistant("reading", calls=[("c1", "read", {"path": "a"})], stop="toolUse"))
    t.msg(result("c1", "file a"))
    fork = t.msg(assistant("done"))
    # Abandoned branch: the user rewound to after 'done' and tried something that failed.
    t.msg(user("abandoned attempt"))
    t.msg(assistant("trying", calls=[("bad1", "bash", {"command": "x"})], stop="toolUse"))
    t.msg(result("bad1", "Command exited with code 1", is_error=True, tool="bash"))
    t.msg(result("bad2", "boom", is_error=True, tool="bash"))
    t.msg(result("bad3", "boom", is_error=True, tool="bash"))
    # /tree back to 'done' with a summary, then the real continuation (the last line is the leaf).
    t.add("branch_summary", parent=fork, fromId=fork, summary="tried x, failed")
    t.msg(user("kept attempt"))
    t.msg(assistant("ok"))
    out = neutral(session_file(tmp_path, t))
    texts = [u.text for u in of(out, UserMessage)]
    assert texts == ["fix the bug", "kept attempt"]
    assert [r.call_id for r in of(out, ToolResult)] == ["c1"]
    assert not any(r.is_error for r in of(out, ToolResult))
    assert a1 and len(of(out, AssistantMessage)) == 3


def test_the_leaf_is_the_last_physical_entry_even_on_an_older_branch(tmp_path: Path) -> None:
    t = Tree()
    root = t.msg(user("first"))
    t.msg(assistant("branch A"))
    t.msg(user("A only"))
    t.msg(user("B only"), parent=root)  # written last: the session continues on B
    texts = [u.text for u in of(neutral(session_file(tmp_path, t)), UserMessage)]
    assert texts == ["first", "B only"]


def test_parent_cycles_and_missing_parents_end_the_walk(tmp_path: Path) -> None:
    t = Tree()
    t.msg(user("orphaned history"))
    t.msg(user("after a missing parent"), parent="nowhere")
    t.msg(user("leaf"))
    texts = [u.text for u in of(neutral(session_file(tmp_path, t)), UserMessage)]
    assert texts == ["after a missing parent", "leaf"]
    cyc = Tree()
    cyc.entries = [
        {"type": "message", "id": "a", "parentId": "b", "message": user("a")},
        {"type": "message", "id": "b", "parentId": "a", "message": user("b")},
    ]
    texts = [u.text for u in of(neutral(session_file(tmp_path / "c", cyc)), UserMessage)]
    assert texts == ["a", "b"]


def test_v1_entries_are_a_linear_chain(tmp_path: Path) -> None:
    lines = [header(version=None), {"type": "message", "timestamp": "2025-12-08T22:41:05.306Z", "message": user("one")},
             {"type": "model_change", "timestamp": "2025-12-08T22:41:06Z", "provider": "anthropic", "modelId": "x"},
             {"type": "message", "timestamp": "2025-12-08T22:41:07Z", "message": assistant("two")},
             {"type": "message", "timestamp": "2025-12-08T22:41:08Z", "message": user("three")}]
    out = neutral(write(tmp_path / "p" / "v1.jsonl", lines))
    assert [u.text for u in of(out, UserMessage)] == ["one", "three"]
    assert len(of(out, AssistantMessage)) == 1


def _migrate_v1_to_v3(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What omp's migration writes: fresh ids, each entry the previous one's child, version 3."""
    out: list[dict[str, Any]] = [title_slot(""), {**lines[0], "version": 3}]
    prev = None
    for i, entry in enumerate(lines[1:]):
        eid = f"{i:08x}"
        out.append({**entry, "id": eid, "parentId": prev})
        prev = eid
    return out


def test_a_v1_file_and_its_v3_migration_import_the_same(tmp_path: Path) -> None:
    v1 = [
        header(version=None, provider="anthropic", modelId="claude"),
        {"type": "message", "timestamp": "2025-12-08T22:41:05Z", "message": user("please read a")},
        {"type": "message", "timestamp": "2025-12-08T22:41:06Z", "message": assistant(calls=[("c1", "read", {"path": "a"})], stop="toolUse")},
        {"type": "message", "timestamp": "2025-12-08T22:41:07Z", "message": result("c1", "no such file", is_error=True)},
        {"type": "message", "timestamp": "2025-12-08T22:41:08Z", "message": assistant("", stop="aborted")},
        {"type": "compaction", "timestamp": "2025-12-08T22:41:09Z", "summary": "s", "firstKeptEntryIndex": 1, "tokensBefore": 5},
        {"type": "message", "timestamp": "2025-12-08T22:41:10Z", "message": {"role": "bashExecution", "command": "ls"}},
        {"type": "message", "timestamp": "2025-12-08T22:41:11Z", "message": user("go on")},
        {"type": "message", "timestamp": "2025-12-08T22:41:12Z", "message": assistant("done", provider="openai", model="gpt-5")},
    ]
    a = neutral(write(tmp_path / "a" / "x.jsonl", v1))
    b = neutral(write(tmp_path / "b" / "x.jsonl", _migrate_v1_to_v3(v1)))
    assert [r for r in a if not isinstance(r, Session)] == [r for r in b if not isinstance(r, Session)]
    assert len(of(a, UserMessage)) == 3 and len(of(a, ToolResult)) == 1 and len(of(a, AssistantMessage)) == 3


def test_malformed_lines_and_unknown_entry_types_are_tolerated(tmp_path: Path) -> None:
    t = Tree()
    t.msg(user("one"))
    t.add("unknown_future_entry_type", data={"x": 1})
    t.msg(user("two"))
    t.add("message", message="not an object")
    t.add("message", message={"role": "alien"})
    t.msg(assistant("fine"))
    t.add("unknown_future_entry_type")  # every line of it is reported: each is a skipped line
    t.add("mystery")  # the last line: an unknown type is still the leaf
    path = write(tmp_path / "p" / "s.jsonl", [header(), *t.entries[:2], "not json {", "[1, 2]", *t.entries[2:]])
    src = source_of(path)
    recs, probs = read(src)
    assert sorted((p.kind, p.line) for p in probs) == [
        ("malformed", 4), ("malformed", 5), ("unknown_type", 3), ("unknown_type", 10), ("unknown_type", 11)]
    assert all(p.skipped_data for p in probs)
    assert "unknown_future_entry_type" in next(p.message for p in probs if p.line == 3)
    out = translate(src, recs)
    assert [u.text for u in of(out, UserMessage)] == ["one", "two"]
    assert len(of(out, AssistantMessage)) == 1


def test_a_file_without_a_header_is_not_a_session(tmp_path: Path) -> None:
    t = Tree()
    t.msg(user("hi"))
    path = write(tmp_path / "x.jsonl", [header(), *t.entries])
    src = source_of(path)
    path.write_text("\n".join(['{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"x"}}', ""]))
    recs, probs = read(src)
    assert recs == [] and [p.kind for p in probs] == ["no_header"]


def test_gzip_archives_import_like_plain_files(tmp_path: Path) -> None:
    t = Tree()
    t.msg(user("archived"))
    t.msg(assistant("ok"))
    lines = [title_slot(), header(), *t.entries]
    plain = write(tmp_path / "a" / "s.jsonl", lines)
    packed = write(tmp_path / "b" / "s.jsonl.gz", lines, gz=True)
    src = source_of(packed)
    assert src.compression == "gz"
    assert neutral(packed) == neutral(plain)


def test_a_line_too_big_to_hold_is_placed_from_its_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import rematch_omp.tree as tree
    import rematch_trace.importing.reader as jsonl

    monkeypatch.setattr(jsonl, "BIG_LINE", 512)
    monkeypatch.setattr(jsonl, "WHOLE_LINE", 512)
    monkeypatch.setattr(tree, "BIG_LINE", 512)
    t = Tree()
    root = t.msg(user("start"))
    t.msg(result("big1", "y" * 3000))  # ids first (omp >= 16 key order)
    t.msg(user("abandoned"), parent=root)
    t.entries[-1]["message"]["content"][0]["text"] = "z" * 3000
    # ids last, as omp's migration writes them
    t.entries.append({"type": "message", "timestamp": "2026-08-21T15:00:00Z", "message": result("big2", "w" * 3000), "id": "last", "parentId": t.entries[1]["id"]})
    out = neutral(session_file(tmp_path, t))
    assert [r.call_id for r in of(out, ToolResult)] == ["big1", "big2"]
    assert [u.text for u in of(out, UserMessage)] == ["start"]


def test_index_fast_path_agrees_with_full_parsing(tmp_path: Path) -> None:
    import io

    from rematch_omp.tree import index

    t = Tree()
    t.msg(user("a"))
    t.add("custom", customType="tool_execution_start", data={"id": "fake", "parentId": None})
    t.msg(user("b"))
    # payload-first key order (custom_message), and a nested "id" that must not be taken for the entry's
    payload_first = {"customType": "x", "content": [{"id": "decoy", "parentId": None}], "type": "custom_message", "id": "cm", "parentId": t.leaf, "timestamp": "2026-08-21T15:00:00Z"}
    t.entries.append(payload_first)
    body = "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in [header(), *t.entries]).encode()
    idx = index(io.BytesIO(body))
    assert idx.path_lines == {2, 3, 4, 5}


def test_subagent_files_in_a_parent_folder_are_sub_sessions(tmp_path: Path) -> None:
    proj = tmp_path / "sessions" / "-proj"
    parent = write(proj / f"2026-08-22T11-00-00-000Z_{SID}.jsonl", [title_slot(), header()])
    child_t = Tree()
    child_t.msg(user("task text", attribution="agent"))
    child = write(proj / f"2026-08-22T11-00-00-000Z_{SID}" / "scout.jsonl", [title_slot(""), header(sid="child-sid"), *child_t.entries])
    advisor = write(proj / f"2026-08-22T11-00-00-000Z_{SID}" / "__advisor.jsonl", [header(sid="adv-sid")])
    nested = write(proj / f"2026-08-22T11-00-00-000Z_{SID}" / "scout" / "deeper.jsonl", [header(sid="deep-sid")])
    assert source_of(parent).agent_kind == "main"
    for path, parent_file, parent_sid in ((child, parent, SID), (advisor, parent, SID), (nested, child, "child-sid")):
        src = source_of(path)
        assert (src.agent_kind, src.parent) == ("sub", parent_file)
        (s,) = of(neutral(path), Session)
        assert (s.agent_kind, s.parent_session_id) == ("sub", parent_sid)
    (s,) = of(neutral(child), Session)
    assert s.agent_name == "scout"
    assert of(neutral(child), UserMessage) == []  # the task prompt is the agent's, not a person's


# -- append-resume --------------------------------------------------------------------------


def _resume(path: Path, cut_line: int) -> list[Any]:
    """Import the first ``cut_line`` lines, then the rest as an append; the concatenated output."""
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    prefix = b"".join(lines[:cut_line])
    path.write_bytes(prefix)
    src = source_of(path)
    recs, _ = read(src)
    state: dict[str, Any] = {}
    out = translate(src, recs, state)
    path.write_bytes(data)
    more, _ = read(src, start=len(prefix))
    return out + translate(src, more, state)


def test_appends_that_extend_the_leaf_resume(tmp_path: Path) -> None:
    t = Tree()
    t.msg(user("one"))
    t.msg(assistant("a", calls=[("c1", "read", {})], stop="toolUse"))
    t.msg(result("c1", "r"))
    t.msg(assistant("b"))
    t.msg(user("two"))
    t.msg(assistant("c"))
    path = session_file(tmp_path, t)
    full = neutral(path)
    for cut in range(2, len(t.entries) + 2):
        assert _resume(path, cut) == full


def test_a_branch_switch_after_the_resume_point_restarts_the_import(tmp_path: Path) -> None:
    t = Tree()
    first = t.msg(user("one"))
    t.msg(assistant("a"))
    t.msg(user("sibling"), parent=first)
    path = session_file(tmp_path, t)
    with pytest.raises(RestartImport):
        _resume(path, 4)  # slot, header, 2 entries; the sibling comes after
    t2 = Tree()
    t2.msg(user("x"))
    path2 = session_file(tmp_path / "b", t2)
    data = path2.read_bytes()
    path2.write_bytes(data + data)  # a rewritten file: a header after the resume point
    with pytest.raises(RestartImport):
        src = source_of(path2)
        recs, _ = read(src, 0)
        state: dict[str, Any] = {}
        translate(src, [r for r in recs if r.end <= len(data)], state)
        more, _ = read(src, start=len(data))
        translate(src, more, state)


def test_v1_appends_resume_linearly(tmp_path: Path) -> None:
    lines = [header(version=None)] + [
        {"type": "message", "timestamp": f"2025-12-08T22:41:0{i}Z", "message": user(f"u{i}") if i % 2 else assistant(f"a{i}")}
        for i in range(6)
    ]
    path = write(tmp_path / "p" / "v1.jsonl", lines)
    full = neutral(path)
    for cut in range(1, len(lines)):
        assert _resume(path, cut) == full


def test_lines_appended_between_the_two_passes_wait_for_the_next_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import rematch_omp.tree as tree

    t = Tree()
    t.msg(user("one"))
    t.msg(assistant("a"))
    path = session_file(tmp_path, t)
    before = path.read_bytes()
    t.msg(user("two"))
    t.msg(user("sibling"), parent=t.entries[0]["id"])  # would change the active branch
    appended = b"".join((json.dumps(e, separators=(",", ":")) + "\n").encode() for e in t.entries[2:])
    real_index = tree.index

    def growing_index(f: Any) -> Any:
        idx = real_index(f)
        with open(path, "ab") as out:
            out.write(appended)
        return idx

    monkeypatch.setattr(tree, "index", growing_index)
    src = source_of(path)
    recs, _ = read(src)
    assert recs[-1].end == len(before)
    state: dict[str, Any] = {}
    assert [u.text for u in of(translate(src, recs, state), UserMessage)] == ["one"]
    monkeypatch.setattr(tree, "index", real_index)
    more, _ = read(src, start=recs[-1].end)
    with pytest.raises(RestartImport):
        translate(src, more, state)  # the sibling switched branch: the core re-imports whole
