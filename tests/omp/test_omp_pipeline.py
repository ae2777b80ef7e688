"""The omp plugin through the real core: the seed's import rules, end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omp_build import SID, Tree, assistant, header, result, title_slot, user, write

import rematch_omp
from rematch_trace.importing.source_import import import_source
from rematch_trace.store.datafolder import DataDir
from rematch_trace.testing import make_host, synthesize_file, validate_trace


def trace(path: Path) -> list[dict[str, Any]]:
    (s,) = synthesize_file(path, [rematch_omp], hint="omp", events=False)
    assert validate_trace(s.records) == []
    return s.records


def evs(records: list[dict[str, Any]], ev: str) -> list[dict[str, Any]]:
    return [r for r in records if r["ev"] == ev]


def session_file(tmp_path: Path, tree: Tree) -> Path:
    return write(tmp_path / "sessions" / "-proj" / f"2026-08-21T14-02-10-500Z_{SID}.jsonl", [title_slot(), header(), *tree.entries])


def _failing_run(t: Tree, n: int) -> None:
    t.msg(assistant("trying", calls=[(f"f{i}", "bash", {"command": "false"}) for i in range(n)], stop="toolUse"))
    for i in range(n):
        t.msg(result(f"f{i}", "Command exited with code 1", is_error=True, tool="bash"))


def test_tool_errors_on_an_abandoned_branch_do_not_flag_the_session(tmp_path: Path) -> None:
    t = Tree()
    t.msg(user("build it"))
    done = t.msg(assistant("built"))
    t.msg(user("now deploy"))
    _failing_run(t, 4)
    t.add("branch_summary", parent=done, fromId=done, summary="deploy failed")
    t.msg(user("write the changelog instead"))
    t.msg(assistant("written"))
    (s,) = synthesize_file(session_file(tmp_path, t), [rematch_omp], hint="omp", events=False)
    assert not s.flagged and s.reasons == []
    assert [r["text"] for r in evs(s.records, "input")] == ["build it", "write the changelog instead"]
    assert evs(s.records, "tool_result") == []
    # The same failures on the active branch do flag it.
    t2 = Tree()
    t2.msg(user("build it"))
    _failing_run(t2, 4)
    (s2,) = synthesize_file(session_file(tmp_path / "b", t2), [rematch_omp], hint="omp", events=False)
    assert s2.flagged and "error_cluster" in s2.reasons


def test_seed_rules_on_a_small_session(tmp_path: Path) -> None:
    t = Tree()
    t.msg(user("/mode"))  # a slash line: dropped
    t.msg(user("read a and b"))
    t.msg(assistant("reading", calls=[("c1", "read", {"path": "a"}), ("c2", "read", {"path": "b"})], stop="toolUse"))
    t.msg(result("c1", "A"))
    t.msg(result("c2", "no such file", is_error=True))
    t.msg(assistant("", stop="aborted", errorMessage="Interrupted by user"))
    t.msg(user("stop, use c instead"))
    t.msg({"role": "bashExecution", "command": "ls", "output": "", "exitCode": 0})
    t.add("custom_message", customType="skill-prompt", content="...\nUser: go", display=True,
          details={"name": "deploy", "args": "go"}, attribution="user")
    t.msg(assistant("switched", provider="openai", model="gpt-5"))
    recs = trace(session_file(tmp_path, t))
    start = recs[0]
    assert (start["session_id"], start["cwd"], start["mode"], start["omp_version"]) == (SID, "/home/dev/proj", "import", None)
    assert start["model"] == {"provider": "anthropic", "id": "claude-opus-4-5"}
    assert start["agent"]["kind"] == "main"
    inputs = evs(recs, "input")
    assert [(i["text"], i["idle"], i["prelabel"], i["skills_invoked"]) for i in inputs] == [
        ("read a and b", True, "none", []),
        ("stop, use c instead", False, "interrupt", []),
        ("go", True, "none", ["deploy"]),
    ]
    order = [r["ev"] for r in recs]
    # turn_end after its tool results; agent_end before the input that ends the run
    assert order == [
        "session_start", "input", "tool_result", "tool_result", "turn_end", "turn_end",
        "agent_end", "input", "agent_end", "input", "model_change", "turn_end", "agent_end", "session_shutdown",
    ]
    assert [r["is_error"] for r in evs(recs, "tool_result")] == [False, True]
    assert evs(recs, "tool_result")[1]["error_class"] == "not_found"
    assert evs(recs, "model_change")[0]["to"] == {"provider": "openai", "id": "gpt-5"}


def test_reimport_is_byte_identical(tmp_path: Path) -> None:
    t = Tree()
    t.msg(user("hi"))
    t.msg(assistant("x", calls=[("c", "bash", {"command": "ls"})], stop="toolUse"))
    t.msg(result("c", "out", tool="bash"))
    path = session_file(tmp_path, t)
    assert trace(path) == trace(path)


def test_v1_and_its_v3_migration_give_the_same_trace(tmp_path: Path) -> None:
    v1 = [header(version=None)]
    for i, m in enumerate([user("one"), assistant(calls=[("c1", "read", {"path": "x"})], stop="toolUse"),
                           result("c1", "no such file", is_error=True), assistant("", stop="aborted"),
                           user("two"), assistant("done", model="other")]):
        v1.append({"type": "message", "timestamp": f"2025-12-08T22:41:0{i}Z", "message": m})
    v3: list[Any] = [title_slot(""), {**v1[0], "version": 3}]
    prev = None
    for i, e in enumerate(v1[1:]):
        v3.append({**e, "id": f"{i + 1:08x}", "parentId": prev})
        prev = f"{i + 1:08x}"
    a = trace(write(tmp_path / "a" / "s.jsonl", v1))
    b = trace(write(tmp_path / "b" / "s.jsonl", v3))
    for ev in ("input", "tool_result", "turn_end", "model_change", "agent_end"):
        assert evs(a, ev) == evs(b, ev), ev
    assert len(evs(a, "input")) == 2 and len(evs(a, "turn_end")) == 3


def _import(data: DataDir, path: Path, saved: dict[str, Any] | None = None) -> Any:
    host = make_host([rematch_omp])
    src = host.detect(path, "omp")
    assert src is not None
    return import_source(host, src, data, saved=saved)


def test_a_grown_file_resumes_or_restarts_to_the_same_trace(tmp_path: Path) -> None:
    t = Tree()
    t.msg(user("one"))
    t.msg(assistant("a", calls=[("c1", "read", {})], stop="toolUse"))
    t.msg(result("c1", "r"))
    branch_point = t.msg(assistant("b"))
    cut = len(t.entries)
    t.msg(user("two"))
    t.msg(assistant("c"))
    t.msg(user("sibling of two"), parent=branch_point)  # a branch switch after the cut
    t.msg(assistant("d"))
    full_path = session_file(tmp_path / "full", t)
    want = trace(full_path)
    for upto in (cut + 2, len(t.entries)):  # an append that extends the leaf; one that switches branch
        grown = session_file(tmp_path / f"grown{upto}", Tree())
        lines = full_path.read_bytes().splitlines(keepends=True)
        grown.write_bytes(b"".join(lines[: 2 + cut]))
        data = DataDir(tmp_path / f"data{upto}")
        data.ensure()
        first = _import(data, grown)
        grown.write_bytes(b"".join(lines[: 2 + upto]))
        second = _import(data, grown, saved=first.saved)
        got = [r for r in _read(data.trace_path(SID))]
        expect = want if upto == len(t.entries) else trace(grown)
        assert got == expect
        assert second.resumed == (upto != len(t.entries))


def _read(path: Path) -> list[dict[str, Any]]:
    import json

    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
