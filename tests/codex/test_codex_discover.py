"""Finding, claiming and reading rollouts (plain and zstd), and the plugin's registration."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import orjson
import pytest
import zstandard
from codex_fixtures import SID, Lines, of, rollout_path, split_run, synth, translate, usage, write

import rematch_codex as plugin
from rematch_codex import discover
from rematch_trace.host.source import RawRecord, Source
from rematch_trace.host.vocab import UserMessage


def _lines(n: int = 3) -> list[dict]:
    b = Lines()
    out = [b.meta()]
    for i in range(n):
        out += [b.turn_context(), b.user(f"prompt {i}"), b.assistant(f"answer {i}"), b.tokens(usage(10 * (i + 1), 0, i + 1))]
    return out


def _compress(path: Path, frames: int = 1) -> Path:
    data = path.read_bytes()
    target = path.with_name(path.name + ".zst")
    c = zstandard.ZstdCompressor()
    cut = len(data) // frames
    parts = [data[i * cut : (i + 1) * cut if i < frames - 1 else len(data)] for i in range(frames)]
    target.write_bytes(b"".join(c.compress(p) for p in parts))
    return target


def test_default_locations_follow_codex_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "ch"))
    assert [(loc.harness, loc.path) for loc in plugin.default_locations()] == [
        ("codex", tmp_path / "ch" / "sessions"),
        ("codex", tmp_path / "ch" / "archived_sessions"),
    ]
    monkeypatch.setenv("CODEX_HOME", "")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert next(iter(plugin.default_locations())).path == tmp_path / ".codex" / "sessions"


def test_detect_claims_rollouts_only(tmp_path: Path) -> None:
    path = write(rollout_path(tmp_path), _lines(1))
    head = path.read_bytes()[:4096]
    source = plugin.detect_source(path, head, None)
    assert source is not None and (source.harness, source.agent_kind, source.compression) == ("codex", "main", "")
    # Content decides for a renamed file; other harnesses' lines are left alone.
    renamed = tmp_path / "export.jsonl"
    renamed.write_bytes(path.read_bytes())
    assert plugin.detect_source(renamed, head, None) is not None
    claude = tmp_path / "11111111-2222-3333-4444-555555555555.jsonl"
    claude.write_bytes(b'{"type":"user","sessionId":"x","message":{"role":"user","content":"hi"}}\n')
    assert plugin.detect_source(claude, claude.read_bytes(), None) is None
    assert plugin.detect_source(claude, claude.read_bytes(), "codex") is None
    history = tmp_path / "history.jsonl"
    history.write_bytes(b'{"session_id":"x","ts":1,"text":"hi"}\n')
    assert plugin.detect_source(history, history.read_bytes(), "codex") is None


def test_detect_marks_subagent_files(tmp_path: Path) -> None:
    b = Lines()
    meta = b.meta(source={"subagent": {"thread_spawn": {"parent_thread_id": "p", "depth": 1}}})
    path = write(rollout_path(tmp_path), [meta])
    source = plugin.detect_source(path, path.read_bytes()[:4096], "codex")
    assert source is not None and source.agent_kind == "sub"


def test_legacy_first_line_is_recognised(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    path.write_bytes(b'{"id":"' + SID.encode() + b'","timestamp":"2025-05-01T00:00:00Z","instructions":null}\n')
    assert plugin.detect_source(path, path.read_bytes(), None) is not None


def test_zst_rollout_reads_like_the_plain_one(tmp_path: Path) -> None:
    plain = write(rollout_path(tmp_path), _lines())
    expected = translate(plain)
    packed = _compress(plain, frames=2)
    plain.unlink()
    source = plugin.detect_source(packed, packed.read_bytes()[:4096], "codex")
    assert source is not None and source.compression == "zst"
    got = list(plugin.to_trace_records(source, (r for r in plugin.read_transcript(source, 0) if isinstance(r, RawRecord)), {}))
    assert got == expected
    assert [r.text for r in of(got, UserMessage)] == ["prompt 0", "prompt 1", "prompt 2"]


def test_zst_read_from_an_offset(tmp_path: Path) -> None:
    plain = write(rollout_path(tmp_path), _lines())
    whole = [r for r in discover.read(Source("codex", plain), 0) if isinstance(r, RawRecord)]
    packed = _compress(plain)
    plain.unlink()
    source = Source("codex", packed, compression="zst")
    start = whole[4].offset
    tail = [r for r in plugin.read_transcript(source, start) if isinstance(r, RawRecord)]
    assert [r.value for r in tail] == [r.value for r in whole[4:]]
    assert [r.offset for r in tail] == [r.offset for r in whole[4:]]
    # Resuming a compressed source mid-file continues the translation exactly.
    assert split_run(source, whole, 4) == translate(write(plain, [r.value for r in whole]))


def test_plain_rollout_is_preferred_over_its_zst_sibling(tmp_path: Path) -> None:
    plain = write(rollout_path(tmp_path), _lines(1))
    packed = _compress(plain)
    assert plugin.detect_source(packed, packed.read_bytes()[:4096], "codex") is None
    plain.unlink()
    assert plugin.detect_source(packed, packed.read_bytes()[:4096], "codex") is not None


def test_plugin_is_installed_as_an_entry_point() -> None:
    eps = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="rematch")}
    assert eps.get("codex") == "rematch_codex"


def test_end_to_end_trace(tmp_path: Path) -> None:
    b = Lines()
    lines = [
        b.meta(),
        b.turn_context(model="m1"),
        b.user("run the tests"),
        b.assistant("running"),
        b.call("shell_command", {"command": "pytest"}, "c1"),
        b.tokens(usage(100, 20, 10)),
        b.output("c1", "Exit code: 1\nWall time: 3 seconds\nOutput:\n1 failed\n"),
        b.reasoning(),
        b.assistant("one failure"),
        b.tokens(usage(250, 70, 30)),
        b.event("turn_aborted", reason="interrupted"),
        b.turn_context(model="m2"),
        b.user("do it again"),
        b.assistant("ok"),
        b.tokens(usage(400, 100, 40)),
    ]
    path = write(rollout_path(tmp_path), lines)
    (s,) = synth(path)
    assert s.session_id == SID
    evs = [r["ev"] for r in s.records]
    assert evs[0] == "session_start" and evs[-1] == "session_shutdown"
    inputs = [r for r in s.records if r["ev"] == "input"]
    assert [(r["text"], r["prelabel"]) for r in inputs] == [("run the tests", "none"), ("do it again", "interrupt")]
    (res,) = [r for r in s.records if r["ev"] == "tool_result"]
    assert (res["tool"], res["is_error"], res["error_class"]) == ("shell_command", True, "exit_nonzero")
    assert res["input"] == {"command": "pytest"}
    ends = [r for r in s.records if r["ev"] == "turn_end"]
    assert sum(e["usage"]["totalTokens"] for e in ends) == 440
    assert sum(e["usage"]["cacheRead"] for e in ends) == 100
    assert [r["to"]["id"] for r in s.records if r["ev"] == "model_change"] == ["m2"]


def test_reimport_is_byte_identical(tmp_path: Path) -> None:
    path = write(rollout_path(tmp_path), _lines())
    first = synth(path, out=tmp_path / "a")
    second = synth(path, out=tmp_path / "b")
    assert [orjson.dumps(r) for r in first[0].records] == [orjson.dumps(r) for r in second[0].records]
    traces_a = sorted((tmp_path / "a").rglob("*.jsonl"))
    traces_b = sorted((tmp_path / "b").rglob("*.jsonl"))
    assert [p.name for p in traces_a] == [p.name for p in traces_b] and traces_a
    for pa, pb in zip(traces_a, traces_b, strict=True):
        assert pa.read_bytes() == pb.read_bytes()
