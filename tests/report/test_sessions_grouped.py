"""Sessions grouped as people think of them, through the real CLI: each main session with its subagents,
sidechains and compaction runs under it, counted once, by project (``rematch sessions``, ``stats``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from hostile_gen import codex_lines, path_for, run_import, write
from page_check import embedded, parse
from report_gen import rematch, run


def _sessions(data: Path, *args: str) -> list[dict[str, Any]]:
    value: list[dict[str, Any]] = json.loads(run("sessions", "--out", str(data), "--json", *args).stdout)
    return value


def _corpus_mains(corpus: Path) -> dict[str, int]:
    """How many main sessions each harness's files hold, read from the files themselves."""
    cc = [p for p in (corpus / "claude_code" / "projects").glob("*/*.jsonl") if not p.name.startswith("agent-")]
    codex = 0
    for p in (corpus / "codex").rglob("rollout-*.jsonl"):
        first = orjson.loads(p.read_bytes().split(b"\n", 1)[0])
        meta = first.get("payload") if first.get("type") == "session_meta" else {}
        source = meta.get("source") if isinstance(meta, dict) else None
        codex += not (isinstance(source, dict) and "subagent" in source)
    omp = list((corpus / "omp" / "sessions").glob("*/*.jsonl"))  # a subagent's file is in its parent's folder
    # One format, two harnesses: omp's files start with its title slot, pi's do not.
    slot = [p.read_bytes().startswith(b'{"type":"title"') for p in omp]
    return {"claude_code": len(cc), "codex": codex, "omp": sum(slot), "pi": len(slot) - sum(slot)}


_IMPORTED: dict[str, Path] = {}


@pytest.fixture
def corpus_data(corpus_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared corpus imported once for this module's tests."""
    if "data" not in _IMPORTED:
        data = tmp_path_factory.mktemp("grouped") / "data"
        assert run_import(data, corpus_dir, timeout=600).returncode in (0, 1)
        _IMPORTED["data"] = data
    return _IMPORTED["data"]


def test_corpus_main_sessions_per_harness(corpus_dir: Path, corpus_data: Path) -> None:
    rows = _sessions(corpus_data)
    mains = _corpus_mains(corpus_dir)
    assert mains == {"claude_code": 4, "codex": 6, "omp": 4, "pi": 2}
    top = [r for r in rows if r["parent"] is None]
    assert {h: sum(r["harness"] == h for r in top) for h in mains} == mains
    # The 12 Claude Code sessions of 5 files: 4 main sessions, the 8 others under them.
    cc = {r["session_id"]: r for r in rows if r["harness"] == "claude_code"}
    assert len(cc) == 12
    demo, spot, sample = "fe5e1c67-53e7-4862-81ae-d0e013e3270b", "8463c716-a2ea-4c14-9efa-87158ebd9f20", \
        "7f2abd2d-7cfc-4447-9ddd-3ca8d14e02e9"
    assert cc[demo]["children"] == [f"{demo}.sidechain-{i}" for i in range(1, 6)]  # inline isSidechain blocks
    subagents = corpus_dir / "claude_code" / "projects" / "-Users-USER-handgemacht" / spot / "subagents"
    # 2.1.x subagent files, the compaction run among them, oldest first.
    assert sorted(cc[spot]["children"]) == sorted(f"{spot}.{p.stem}" for p in subagents.glob("agent-*.jsonl"))
    assert f"{spot}.agent-acompact-f46190" in cc[spot]["children"]
    assert cc[sample]["children"] == [f"{sample}.agent-90fa40b6"]  # a 2.0.x subagent file beside its session
    for sid, r in cc.items():
        assert r["parent"] == (sid.split(".")[0] if "." in sid else None) and not r["orphan"]
    # omp: the subagent transcript in its parent's folder.
    omp_sub = next(r for r in rows if r["harness"] == "omp" and r["parent"])
    assert omp_sub["parent"] == "0198d27b-5e03-7b8a-91c6-4fa2d83e0b57" and not omp_sub["orphan"]
    # Codex: the spawned child's parent rollout is not in the corpus: listed, top-level, an orphan.
    codex_sub = [r for r in rows if r["harness"] == "codex" and r["parent"]]
    assert [(r["session_id"], r["parent"], r["orphan"]) for r in codex_sub] == [
        ("019d924b-53f5-78f1-a0d4-69aa13191f54", "019d9249-e0ee-7020-a305-b6369cd02251", True)]
    # Rolled up: a main session's cost and tokens include everything under it, each counted once.
    total = json.loads(run("stats", "--out", str(corpus_data), "--json").stdout)["total"]
    tops = [r for r in rows if "rolled_up" in r]
    assert len(tops) == 4 + 6 + 6 + 1 == total["sessions"]
    assert sum(r["rolled_up"]["tokens"] for r in tops) == sum(r["tokens"] for r in rows) == total["tokens"]
    assert cc[demo]["rolled_up"]["sessions"] == 6
    assert cc[demo]["rolled_up"]["tool_errors"] == sum(cc[s]["tool_errors"] for s in [demo, *cc[demo]["children"]])


def test_corpus_grouped_listing(corpus_data: Path) -> None:
    text = run("sessions", "--out", str(corpus_data)).stdout.splitlines()
    assert text[-1].startswith("17 session(s), and 9 under them")
    heads = [line for line in text if line.startswith("== ")]
    assert "== /path/to/Demo (folder; 1 main session(s), 6 in all)" in heads
    at = text.index("== /path/to/Demo (folder; 1 main session(s), 6 in all)")
    demo = text[at + 1:at + 7]
    assert "fe5e1c67-53e7-4862-81ae-d0e013e3270b (+5 under it)" in demo[0]
    assert all("└ fe5e1c67-53e7-4862-81ae-d0e013e3270b.sidechain-" in line for line in demo[1:])
    assert any("019d924b-53f5-78f1-a0d4-69aa13191f54 (orphan: parent not imported)" in line for line in text)
    # --flat: every session on its own line, as before.
    flat = run("sessions", "--out", str(corpus_data), "--flat").stdout.splitlines()
    assert flat[-1] == "26 session(s)" and not any(line.startswith("== ") for line in flat)
    # --project: the sessions of one project, children with their main session (whose folder it is).
    spotter = _sessions(corpus_data, "--project", "spotter-fum")
    assert len(spotter) == 3 and {r["project"] for r in spotter} == {"/home/USER/projects/spotter-worktrees/spotter-fum"}
    nothing = rematch("sessions", "--out", str(corpus_data), "--project", "no-such")
    assert nothing.returncode == 1 and nothing.stdout.strip() == "no sessions match"  # nothing found: 1
    # A filter only a child matches chooses its whole session: the main one is listed, and counted once.
    haiku = _sessions(corpus_data, "--model", "claude-haiku-4-5-2025")
    assert {r["session_id"].split(".")[0] for r in haiku} == {"8463c716-a2ea-4c14-9efa-87158ebd9f20",
                                                              "7f2abd2d-7cfc-4447-9ddd-3ca8d14e02e9"}
    stats = json.loads(run("stats", "--out", str(corpus_data), "--json", "--model", "claude-haiku-4-5-2025").stdout)
    assert stats["total"]["sessions"] == 2
    # flagged names the main session of a flagged subagent or sidechain.
    flagged = json.loads(run("flagged", "--out", str(corpus_data), "--json").stdout)
    subs = [f for f in flagged if f["agent_kind"] == "sub"]
    assert {f["parent"] for f in subs} == {"fe5e1c67-53e7-4862-81ae-d0e013e3270b", "019d9249-e0ee-7020-a305-b6369cd02251"}
    assert all(f["parent"] is None for f in flagged if f["agent_kind"] == "main")


def _codex_child(root: Path, sid: str, parent: str, n: int) -> None:
    lines = codex_lines(sid=sid, cwd="/work/tree", turns=1)
    lines[0]["payload"].update(thread_source="subagent", parent_thread_id=parent, agent_role=f"role{n}")
    lines[0]["payload"]["timestamp"] = f"2026-02-10T21:0{n}:00.000Z"
    write(path_for(root, "codex", sid), lines)


def test_orphans_cycles_and_self_parents_are_listed_once(tmp_path: Path) -> None:
    """Hostile parent links: a missing parent, a two-session cycle, a self-parent, and a grandchild. Every
    session is listed exactly once and the commands end."""
    src, data = tmp_path / "src", tmp_path / "data"
    main = "00000000-0000-7000-8000-00000000000a"
    write(path_for(src, "codex", main), codex_lines(sid=main, cwd="/work/tree", turns=1))
    child, grandchild = "00000000-0000-7000-8000-00000000000b", "00000000-0000-7000-8000-00000000000c"
    loop_a, loop_b = "00000000-0000-7000-8000-00000000000d", "00000000-0000-7000-8000-00000000000e"
    selfish, orphan = "00000000-0000-7000-8000-00000000000f", "00000000-0000-7000-8000-000000000010"
    _codex_child(src, child, main, 1)
    _codex_child(src, grandchild, child, 2)
    _codex_child(src, loop_a, loop_b, 3)
    _codex_child(src, loop_b, loop_a, 4)
    _codex_child(src, selfish, selfish, 5)
    _codex_child(src, orphan, "no-such-session", 6)
    assert run_import(data, src).returncode == 0
    rows = {r["session_id"]: r for r in _sessions(data)}
    assert len(rows) == 7
    assert rows[main]["children"] == [child] and rows[child]["children"] == [grandchild]
    assert rows[main]["rolled_up"]["sessions"] == 3 and "rolled_up" not in rows[child]
    assert rows[orphan]["orphan"] and rows[orphan]["parent"] == "no-such-session" and "rolled_up" in rows[orphan]
    assert rows[selfish]["parent"] is None and not rows[selfish]["orphan"]  # a self-parent is no parent
    # The cycle is cut once: one of the two is top-level (marked orphan), the other under it.
    loop = [rows[loop_a], rows[loop_b]]
    assert sorted(len(r["children"]) for r in loop) == [0, 1] and sum("rolled_up" in r for r in loop) == 1
    text = run("sessions", "--out", str(data)).stdout.splitlines()
    assert text[-1] == "4 session(s), and 3 under them (subagents, sidechains, compaction runs; --flat lists each alone)"
    assert sum(sid in line for line in text for sid in rows) == 7  # each once
    assert "  └ " + grandchild in "\n".join(text)  # two levels down
    assert json.loads(run("stats", "--out", str(data), "--json").stdout)["total"]["sessions"] == 4
    run("report", "--data", str(data))  # the index groups them too, without looping
    index = data / "report" / "index.html"
    entries = {e["k"]: e for e in embedded(parse(index))["sessions"]}
    assert len(entries) == 7 and sum(1 for e in entries.values() if e.get("c")) == 3
    assert sum(1 for e in entries.values() if e.get("o")) == 2  # the orphan and the cut loop's top
    html = index.read_text()
    assert html.count('<tbody class="tree"') == 4 and html.count("<tr data-k=") == 7


def test_existing_data_folder_gets_parents_without_a_reimport(corpus_dir: Path, tmp_path: Path) -> None:
    """A data folder from before the parent link (ledger schema 8, summaries version 3): reading commands
    group Claude Code's children at once (their ids name the parent); the next import, which finds nothing
    new, fills in every parent from the ids and saved states (reading no other transcript again than omp's,
    which the later migration of pi's own name reads once more) and makes the stored summaries again from the
    traces (version 5 keeps usage per quarter hour, which only a trace has)."""
    data = tmp_path / "data"
    assert run_import(data, corpus_dir, timeout=600).returncode in (0, 1)
    ledger = data / "ledger.sqlite"
    with sqlite3.connect(ledger) as db:  # back to what rematch before the parent link left
        db.execute("UPDATE sessions SET summary = json_set(json_remove(summary, '$.summary.parent'), "
                   "'$.summary.version', 3) WHERE summary IS NOT NULL")
        db.execute("ALTER TABLE sessions DROP COLUMN parent")
        db.execute("PRAGMA user_version = 8")
    traces = {p: p.stat().st_mtime_ns for p in (data / "traces").iterdir()}
    before = {r["session_id"]: r for r in _sessions(data)}
    assert sum(r["parent"] is not None for r in before.values()) == 8  # Claude Code's, from their ids
    assert before["0198d27b-b9c1-7e44-8a0f-2d6c91e5f3a8"]["parent"] is None  # omp's needs the migration
    with sqlite3.connect(ledger) as db:
        omp_traces = {data / "traces" / f"{sid}.jsonl" for (sid,) in db.execute(
            "SELECT session_id FROM sessions WHERE harness = 'omp'")}
    rerun = run_import(data, corpus_dir, timeout=600)
    assert rerun.returncode in (0, 1)
    # The later migration (pi's own name) reads the 5 sources claimed as omp once more; no other.
    said = json.loads(rerun.stdout)
    assert said["files"]["unchanged"] == 21 - 5 and list(said["redone"].values()) == [5]
    from rematch_trace.store.ledger import SCHEMA_VERSION

    with sqlite3.connect(ledger) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        stored = {sid: json.loads(s)["summary"] for sid, s in db.execute("SELECT session_id, summary FROM sessions")}
    assert {s["version"] for s in stored.values()} == {5}
    assert stored["0198d27b-b9c1-7e44-8a0f-2d6c91e5f3a8"]["parent"] == "0198d27b-5e03-7b8a-91c6-4fa2d83e0b57"
    assert stored["019d924b-53f5-78f1-a0d4-69aa13191f54"]["parent"] == "019d9249-e0ee-7020-a305-b6369cd02251"
    assert {p: p.stat().st_mtime_ns for p in (data / "traces").iterdir() if p not in omp_traces} == \
        {p: m for p, m in traces.items() if p not in omp_traces}
    after = {r["session_id"]: r for r in _sessions(data)}
    assert sum(r["parent"] is not None for r in after.values()) == 10
    assert [r["tokens"] for r in after.values()] == [r["tokens"] for r in before.values()]
    assert sum(r["tokens"] for r in after.values()) > 0
    assert [r["session_id"] for r in after.values() if r["orphan"]] == ["019d924b-53f5-78f1-a0d4-69aa13191f54"]
