"""Batch import: ledger, skip, append-resume, re-import, deleted sources, jobs, lock, domains."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import orjson
import pytest

import rematch_toy
from rematch_trace.errors import RematchError
from rematch_trace.importing import batch
from rematch_trace.importing.batch import ImportSettings as Options
from rematch_trace.importing.batch import run_import
from rematch_trace.importing.lock import ImportLock
from rematch_trace.importing.worker import use_host
from rematch_trace.place.domain import decide_domain
from rematch_trace.store.datafolder import DataDir
from rematch_trace.store.ledger import MIGRATIONS, Ledger
from rematch_trace.testing import make_host

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "transcripts" / "toy" / "demo.jsonl"
OPTS = Options(events=False, redact=False, jobs=1)


def toy_lines(sid: str, n: int) -> bytes:
    out = [orjson.dumps({"toy": 1, "session": sid, "cwd": "/tmp"})]
    for i in range(n):
        out.append(orjson.dumps({"t": 1000 + i, "user": f"step {i} please do the thing number {i}"}))
        out.append(orjson.dumps({"t": 1001 + i, "model": "m", "say": f"ok {i}",
                                 "calls": [{"id": f"c{i}", "tool": "sh", "args": {"cmd": f"echo {i}"}}]}))
        out.append(orjson.dumps({"t": 1002 + i, "result": f"c{i}", "output": "Exit code: 1", "error": i % 2 == 0}))
    return b"\n".join(out) + b"\n"


@pytest.fixture
def host():  # type: ignore[no-untyped-def]
    h = make_host([rematch_toy])
    yield h
    use_host(None)


def import_(src: Path, out: Path, host, opts: Options = OPTS) -> batch.Summary:  # type: ignore[no-untyped-def]
    return run_import([src], DataDir(out), opts, host=host)


def tree(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*.json*")) if p.is_file()}


def test_import_then_unchanged_rerun(tmp_path: Path, host) -> None:  # type: ignore[no-untyped-def]
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(DEMO, src / "demo.jsonl")
    os.utime(src / "demo.jsonl", (time.time() - 100, time.time() - 100))
    first = import_(src, tmp_path / "out", host)
    assert [f.outcome for f in first.files] == ["imported"]
    assert (tmp_path / "out" / "traces" / "toy-demo-1.jsonl").exists()
    assert (tmp_path / "out" / "pending" / "toy-demo-1.json").exists()
    second = import_(src, tmp_path / "out", host)
    assert second.files == [] and second.count("unchanged") == 1
    with Ledger(tmp_path / "out" / "ledger.sqlite") as ledger:
        [row] = ledger.sessions()
        assert row["flagged"] and row["reasons"] == ["redirect"] and row["redirect_seqs"] == [8]
        assert ledger.source(str(src / "demo.jsonl"))["outcome"] == "imported"  # type: ignore[index]
    mode = (tmp_path / "out" / "traces").stat().st_mode & 0o777
    assert mode == 0o700
    assert (tmp_path / "out" / "traces" / "toy-demo-1.jsonl").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("grow_at", [1, 7, 20, 29])
def test_append_resume_equals_full_import(tmp_path: Path, host, grow_at: int) -> None:  # type: ignore[no-untyped-def]
    full = toy_lines("grow", 10)
    lines = full.splitlines(keepends=True)
    src = tmp_path / "src" / "g.jsonl"
    src.parent.mkdir()
    src.write_bytes(b"".join(lines[:grow_at]))
    os.utime(src, (time.time() - 100, time.time() - 100))
    import_(src.parent, tmp_path / "out", host)
    src.write_bytes(full)
    resumed = import_(src.parent, tmp_path / "out", host)
    assert [f.outcome for f in resumed.files] == ["resumed"]
    fresh = tmp_path / "src2" / "g.jsonl"
    fresh.parent.mkdir()
    fresh.write_bytes(full)
    import_(fresh.parent, tmp_path / "out2", host)
    a, b = tree(tmp_path / "out"), tree(tmp_path / "out2")
    assert a["traces/grow.jsonl"] == b["traces/grow.jsonl"]
    assert a.get("pending/grow.json") == b.get("pending/grow.json")


def test_half_written_line_picked_up_next_run(tmp_path: Path, host) -> None:  # type: ignore[no-untyped-def]
    full = toy_lines("tail", 3)
    src = tmp_path / "src" / "t.jsonl"
    src.parent.mkdir()
    src.write_bytes(full[:-10])  # the harness is still writing its last line
    summary = import_(src.parent, tmp_path / "out", host)
    assert summary.files[0].problems[0].endswith("left for the next run")
    src.write_bytes(full)
    import_(src.parent, tmp_path / "out", host)
    fresh = tmp_path / "f" / "t.jsonl"
    fresh.parent.mkdir()
    fresh.write_bytes(full)
    import_(fresh.parent, tmp_path / "out2", host)
    assert tree(tmp_path / "out")["traces/tail.jsonl"] == tree(tmp_path / "out2")["traces/tail.jsonl"]


def test_rewritten_source_reimported_whole(tmp_path: Path, host) -> None:  # type: ignore[no-untyped-def]
    src = tmp_path / "src" / "r.jsonl"
    src.parent.mkdir()
    src.write_bytes(toy_lines("r", 5))
    import_(src.parent, tmp_path / "out", host)
    src.write_bytes(toy_lines("r", 6).replace(b"step", b"STEP"))
    summary = import_(src.parent, tmp_path / "out", host)
    assert [f.outcome for f in summary.files] == ["imported"]
    assert b"STEP" in (tmp_path / "out" / "traces" / "r.jsonl").read_bytes()


def test_deleted_source_kept_as_recorded(tmp_path: Path, host) -> None:  # type: ignore[no-untyped-def]
    src = tmp_path / "src" / "d.jsonl"
    src.parent.mkdir()
    src.write_bytes(toy_lines("d", 2))
    import_(src.parent, tmp_path / "out", host)
    src.unlink()
    summary = import_(src.parent, tmp_path / "out", host)
    # The named folder is now empty: said, never a silent zero.
    assert [(f.outcome, f.path) for f in summary.files] == [("skipped", str(src.parent))]
    assert summary.failed
    assert (tmp_path / "out" / "traces" / "d.jsonl").exists()
    with Ledger(tmp_path / "out" / "ledger.sqlite") as ledger:
        assert [r["session_id"] for r in ledger.sessions()] == ["d"]


def test_jobs_do_not_change_output(tmp_path: Path, host) -> None:  # type: ignore[no-untyped-def]
    src = tmp_path / "src"
    src.mkdir()
    for i in range(6):
        (src / f"s{i}.jsonl").write_bytes(toy_lines(f"s{i}", 3 + i))
    one = import_(src, tmp_path / "one", host, Options(events=False, redact=False, jobs=1))
    two = import_(src, tmp_path / "two", host, Options(events=False, redact=False, jobs=2))
    assert tree(tmp_path / "one") == tree(tmp_path / "two")
    assert [f.path for f in one.files] == [f.path for f in two.files]


def test_second_import_is_refused_while_one_runs(tmp_path: Path, host) -> None:  # type: ignore[no-untyped-def]
    data = DataDir(tmp_path / "out")
    data.ensure()
    with ImportLock(data.lock), pytest.raises(RematchError, match="another rematch import is running"):
        run_import([DEMO], data, OPTS, host=host)


def test_a_removed_lock_file_still_refuses_a_second_import(tmp_path: Path, host) -> None:  # type: ignore[no-untyped-def]
    """A cleanup deletes import.lock under a run: the folder itself stays locked, and says so."""
    data = DataDir(tmp_path / "out")
    data.ensure()
    with ImportLock(data.lock):
        data.lock.unlink()
        with pytest.raises(RematchError, match=r"holds the folder; its lock file .* was removed while it ran"):
            run_import([DEMO], data, OPTS, host=host)
    assert not data.lock.exists()  # the refused run made nothing
    run_import([DEMO], data, OPTS, host=host)  # released with the run that held it


def test_ledger_migrations(tmp_path: Path) -> None:
    import sqlite3

    db = sqlite3.connect(tmp_path / "l.sqlite")
    db.executescript(MIGRATIONS[0])
    db.execute("PRAGMA user_version=1")
    db.commit()
    db.close()
    with Ledger(tmp_path / "l.sqlite") as ledger:
        assert ledger.version == len(MIGRATIONS)
        cols = {r[1] for r in ledger.db.execute("PRAGMA table_info(sessions)")}
        assert {"domain", "cwd", "repo_remote"} <= cols


def test_ledger_newer_than_rematch_refused(tmp_path: Path) -> None:
    """A folder a later rematch wrote (states this one would misread) is refused, saying why."""
    import sqlite3

    with Ledger(tmp_path / "l.sqlite"):
        pass
    db = sqlite3.connect(tmp_path / "l.sqlite")
    db.execute(f"PRAGMA user_version={len(MIGRATIONS) + 1}")
    db.commit()
    db.close()
    with pytest.raises(sqlite3.DatabaseError, match=r"^at schema \d+, newer than this rematch \(\d+\): a later rematch wrote it; upgrade rematch$"):
        Ledger(tmp_path / "l.sqlite").migrate()


def test_domain_decision(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    table = (("path", str(tmp_path / "work") + "/*", "work"), ("remote", "github.com/acme/*", "acme"))
    assert decide_domain(str(repo), str(repo), None, table) is None
    assert decide_domain(str(repo), str(repo), "git@github.com:acme/api.git", table) == "acme"
    assert decide_domain(str(tmp_path / "work" / "x"), None, None, table) == "work"
    (repo / "domain.yml").write_text("domain: payments\n")
    assert decide_domain(str(repo), str(repo), "git@github.com:acme/api.git", table) == "payments"


class Boom:
    """A plugin that claims *.boom.jsonl files and fails while translating them."""

    __name__ = "boom"

    from rematch_trace.host.hookspecs import hookimpl as _impl

    @_impl
    def detect_source(self, path: Path) -> object:
        from rematch_trace.host.source import Source

        return Source("boom", path) if path.name.endswith(".boom.jsonl") else None

    @_impl
    def read_transcript(self, source: object, start: int) -> object:
        from rematch_trace.host.source import RawRecord

        return iter([RawRecord(1, 0, 3, {})])

    @_impl
    def to_trace_records(self, source: object, records: object) -> object:
        def gen() -> object:
            for _ in records:  # type: ignore[attr-defined]
                raise KeyError("missing field")
            yield

        return gen()


def test_failing_plugin_costs_one_file(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.boom.jsonl").write_text("{}\n")
    (src / "b.jsonl").write_bytes(toy_lines("ok", 2))
    host = make_host([rematch_toy, Boom()])
    try:
        summary = run_import([src], DataDir(tmp_path / "out"), OPTS, host=host)
    finally:
        use_host(None)
    outcomes = {Path(f.path).name: f for f in summary.files}
    assert outcomes["b.jsonl"].outcome == "imported"
    assert outcomes["a.boom.jsonl"].outcome == "failed"
    assert "plugin 'boom' failed in to_trace_records at line 1: KeyError" in (outcomes["a.boom.jsonl"].reason or "")
    assert summary.failed
