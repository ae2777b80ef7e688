"""omp rewrites its title slot in place: a retitled, grown file is continued, not re-imported."""

from __future__ import annotations

import json
from pathlib import Path

from omp_build import Tree, assistant, header, result, title_slot, user

import rematch_omp
from rematch_trace.importing.batch import ImportSettings as Options
from rematch_trace.importing.batch import run_import
from rematch_trace.importing.worker import use_host
from rematch_trace.store.datafolder import DataDir
from rematch_trace.testing import make_host


def slot(title: str) -> str:
    line = json.dumps(title_slot(title), separators=(",", ":"))
    return line[:-2] + " " * (255 - len(line)) + '"}'  # 256 bytes with its newline


def lines(tree: Tree, title: str) -> bytes:
    body = [slot(title), json.dumps(header(), separators=(",", ":"))]
    body += [json.dumps(e, separators=(",", ":")) for e in tree.entries]
    return ("\n".join(body) + "\n").encode()


def test_retitled_and_grown_file_resumes(tmp_path: Path) -> None:
    tree = Tree()
    tree.msg(user("add a cache"))
    tree.msg(assistant("ok", [("c1", "bash", {"command": "ls"})], stop="toolUse"))
    tree.msg(result("c1", "a b", tool="bash"))
    src = tmp_path / "src" / "--w--" / "s.jsonl"
    src.parent.mkdir(parents=True)
    src.write_bytes(lines(tree, "first title"))
    assert len(slot("x").encode()) == 255
    host = make_host([rematch_omp])
    try:
        run_import([src.parent], DataDir(tmp_path / "out"), Options(events=False), host=host)
        tree.msg(assistant("done"))
        tree.msg(user("now the docs please"))
        src.write_bytes(lines(tree, "a new title!"))
        summary = run_import([src.parent], DataDir(tmp_path / "out"), Options(events=False), host=host)
        assert [f.outcome for f in summary.files] == ["resumed"]
        fresh = tmp_path / "fresh" / "--w--" / "s.jsonl"
        fresh.parent.mkdir(parents=True)
        fresh.write_bytes(src.read_bytes())
        run_import([fresh.parent], DataDir(tmp_path / "out2"), Options(events=False), host=host)
        [a] = (tmp_path / "out" / "traces").glob("*.jsonl")
        [b] = (tmp_path / "out2" / "traces").glob("*.jsonl")
        assert a.read_bytes() == b.read_bytes()
    finally:
        use_host(None)
