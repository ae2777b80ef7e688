"""Where the plugin looks, what it claims, how it reads, and how it classifies actions."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest
import zstandard
from cc_fixtures import SID, Lines, raw_records, source_of, write

import rematch_claude_code as plugin
from rematch_trace.host.source import Problem, RawRecord, Source


def test_default_location_honours_claude_config_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    [loc] = plugin.default_locations()
    assert (loc.harness, loc.path) == ("claude_code", tmp_path / "cfg" / "projects")


def test_default_location_is_home_claude_projects(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    [loc] = plugin.default_locations()
    assert loc.path == tmp_path / ".claude" / "projects"


def _detect(path: Path, hint: str | None = "claude_code") -> Source | None:
    head = path.read_bytes()[:4096] if path.exists() else b""
    return plugin.detect_source(path, head, hint)


def _one_line(path: Path, **extra: object) -> Path:
    line = Lines().user("hi")
    line.update(extra)
    return write(path, [line])


def test_layouts_are_claimed_with_their_agent_kind(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-work-project"
    main = _one_line(project / f"{SID}.jsonl")
    legacy = _one_line(project / "agent-90fa40b6.jsonl", isSidechain=True, agentId="90fa40b6")
    nested = _one_line(project / SID / "subagents" / "agent-a1.jsonl", isSidechain=True, agentId="a1")
    m, lg, n = _detect(main), _detect(legacy), _detect(nested)
    assert m is not None and (m.harness, m.agent_kind, m.parent) == ("claude_code", "main", None)
    assert lg is not None and lg.agent_kind == "sub"
    assert n is not None and (n.agent_kind, n.parent) == ("sub", project / f"{SID}.jsonl")


def test_memory_tool_results_and_workflow_journals_are_not_claimed(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-work-project"
    for path in (
        project / "memory" / "notes.jsonl",
        project / SID / "tool-results" / "toolu_1.jsonl",
        project / SID / "subagents" / "workflows" / "run1" / "journal.jsonl",
        project / f"{SID}.meta.json",
    ):
        assert _detect(_one_line(path)) is None, path


def test_other_harness_hint_and_empty_files_are_not_claimed(tmp_path: Path) -> None:
    """A file found in Codex's folders is asked of the Codex plugin alone (the host routes by the hint:
    the plugin tests no harness); one the user named is claimed by its content."""
    import rematch_codex
    from rematch_trace.testing import make_host

    path = _one_line(tmp_path / f"{SID}.jsonl")
    host = make_host([plugin, rematch_codex])
    assert host.detect(path, "codex") is None
    assert host.detect(path, None) == Source("claude_code", path) and host.detect(path, "claude_code") is not None
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert _detect(empty) is None


def test_a_named_file_is_claimed_by_its_content_only(tmp_path: Path) -> None:
    ours = _one_line(tmp_path / "short.jsonl")
    snapshot = write(
        tmp_path / "snap.jsonl", [{"type": "file-history-snapshot", "messageId": "x", "snapshot": {}}]
    )
    codex = write(
        tmp_path / "rollout.jsonl", [{"timestamp": "t", "type": "session_meta", "payload": {"id": "x"}}]
    )
    omp = write(tmp_path / "omp.jsonl", [{"type": "session", "version": 3, "id": "x", "cwd": "/"}])
    assert _detect(ours, None) is not None
    assert _detect(snapshot, None) is not None
    assert _detect(codex, None) is None
    assert _detect(omp, None) is None
    sub = _one_line(tmp_path / "renamed.jsonl", isSidechain=True, agentId="abc")
    found = _detect(sub, None)
    assert found is not None and found.agent_kind == "sub"


def test_compressed_transcripts_are_read_whole(tmp_path: Path) -> None:
    b = Lines()
    lines = [b.user("one"), b.user("two")]
    body = b"".join(orjson.dumps(x) + b"\n" for x in lines)
    gz = tmp_path / f"{SID}.jsonl.gz"
    gz.write_bytes(gzip.compress(body))
    zst = tmp_path / "22222222-2222-3333-4444-555555555555.jsonl.zst"
    zst.write_bytes(zstandard.ZstdCompressor().compress(body))
    for path, kind in ((gz, "gz"), (zst, "zst")):
        src = _detect(path, None)
        assert src is not None and src.compression == kind
        assert [r.value["message"]["content"] for r in raw_records(src)] == ["one", "two"]
        # Resuming at a record's end continues after it, even in a compressed stream.
        first = raw_records(src)[0]
        assert [r.value["message"]["content"] for r in raw_records(src, first.end)] == ["two"]


def test_bad_lines_are_reported_and_the_rest_imports(tmp_path: Path) -> None:
    b = Lines()
    unknown = {"type": "hologram", "sessionId": SID}
    path = write(tmp_path / f"{SID}.jsonl", [b.user("one"), "{not json", "[1, 2]", unknown, b.user("two")])
    with open(path, "ab") as f:
        f.write(b'{"type":"user","trunc')
    it = plugin.read_transcript(source_of(path), 0)
    assert it is not None
    items = list(it)
    problems = [p for p in items if isinstance(p, Problem)]
    assert [(p.line, p.kind) for p in problems] == [
        (2, "malformed"),
        (3, "malformed"),
        (4, "unknown_type"),
        (6, "truncated_tail"),
    ]
    records = [r.value for r in items if isinstance(r, RawRecord)]
    assert [v["message"]["content"] for v in records if v["type"] == "user"] == ["one", "two"]


def test_a_vanished_file_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    src = Source("claude_code", tmp_path / "gone.jsonl")
    it = plugin.read_transcript(src, 0)
    assert it is not None
    [problem] = list(it)
    assert isinstance(problem, Problem)


@pytest.mark.parametrize(
    ("tool", "action"),
    [
        ("Bash", "shell_exec"),
        ("Read", "file_read"),
        ("Glob", "file_read"),
        ("Grep", "file_read"),
        ("LS", "file_read"),
        ("NotebookRead", "file_read"),
        ("Write", "file_write"),
        ("Edit", "file_edit"),
        ("MultiEdit", "file_edit"),
        ("NotebookEdit", "file_edit"),
        ("WebFetch", "network"),
        ("WebSearch", "network"),
        ("Task", "subagent"),
        ("Agent", "subagent"),
        ("mcp__github__create_issue", "mcp"),
        ("TodoWrite", "other"),
        ("Skill", "other"),
    ],
)
def test_classify_action(tool: str, action: str) -> None:
    assert plugin.classify_action(tool, {}) == action


def test_prefilter_skips_only_top_level_progress_lines() -> None:
    from rematch_claude_code.reader import ignorable

    progress = b'{"parentUuid":null,"cwd":"/w","sessionId":"s","type":"progress","data":{"type":"x"}}\n'
    snapshot = b'{"type":"file-history-snapshot","messageId":"m","snapshot":{}}\n'
    nested = (b'{"parentUuid":"p","message":{"content":[{"type":"tool_use","input":{"type":"progress"}}]},'
              b'"type":"assistant"}\n')
    user = b'{"parentUuid":"p","type":"user","message":{"content":"the \\"type\\":\\"progress\\" key"}}\n'
    assert ignorable(progress) and ignorable(snapshot)
    assert not ignorable(nested) and not ignorable(user)
