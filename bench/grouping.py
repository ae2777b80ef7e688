"""Issue 32's grouped sessions: what grouping costs ``rematch sessions`` / ``stats`` reading stored summaries.

    python bench/grouping.py --size-mb 1024 --base /tmp/group-base     # /tmp/group-base: a worktree of main

Builds (once) the archive of bench/search.py (real Claude Code sessions copied with fresh ids, by
``bench/real_copies.py``'s builder) in ``bench/out/grouping``, imports it with every core, then
gives each command's CPU time (user + system of the process, best of ``--repeat``):

- this branch: ``sessions`` (grouped, the default), ``sessions --flat``, ``sessions --json``, ``stats``;
- main (``--base``, its ``core`` on ``PYTHONPATH``): ``sessions``, ``stats``, on a copy of the data folder
  taken back to what main writes (ledger schema 8 without ``parent``, summaries of version 3), so that
  both read stored summaries only.

The archive's copies are top-level sessions only (the builder copies no subagent files), so what is
measured is the grouping's pass over every summary, not a deep tree; a second part adds
``--children`` subagent rows per tenth session to the copy (ledger rows and summaries only, their parent
set) to weigh trees.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from real_copies import _DEFAULT_SOURCE, build, sessions_of  # noqa: E402


def cpu_of(args: list[str], env: dict[str, str], repeat: int) -> tuple[float, float]:
    """(best wall, best CPU) seconds of ``python -m rematch_trace.cli ARGS`` run ``repeat`` times."""
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "rematch_trace.cli", *args], capture_output=True, env=env)
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise SystemExit(f"{args}: {done.stderr.decode(errors='replace')[-400:]}")
        best = (min(best[0], wall), min(best[1], after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime))
    return best


def _copy(data: Path, target: Path) -> None:
    """A copy of the data folder, its ledger checkpointed first (no WAL file to copy)."""
    with sqlite3.connect(data / "ledger.sqlite") as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(data, target, symlinks=True,
                    ignore=shutil.ignore_patterns("report", "search.sqlite*", "*-wal", "*-shm"))


def to_main(data: Path, target: Path) -> None:
    """A copy of ``data`` as main leaves it: no ``parent`` column, schema 8, summaries of version 3."""
    _copy(data, target)
    with sqlite3.connect(target / "ledger.sqlite") as db:
        db.execute("UPDATE sessions SET summary = json_set(json_remove(summary, '$.summary.parent'), "
                   "'$.summary.version', 3) WHERE summary IS NOT NULL")
        db.execute("ALTER TABLE sessions DROP COLUMN parent")
        db.execute("PRAGMA user_version = 8")
        db.commit()
        db.execute("VACUUM")


def add_children(data: Path, per_tenth: int) -> int:
    """Give every tenth session ``per_tenth`` subagent rows (copies of its row and summary, parent set); how many."""
    added = 0
    with sqlite3.connect(data / "ledger.sqlite") as db:
        rows = db.execute("SELECT rowid, session_id FROM sessions WHERE agent_kind = 'main' ORDER BY rowid").fetchall()
        for rowid, sid in rows[::10]:
            for k in range(per_tenth):
                child = f"{sid}.agent-bench{k}"
                db.execute(
                    "INSERT INTO sessions SELECT harness, ?, 'sub', source_path, source_size, source_mtime_ns, "
                    "fingerprint, offset, trace_path, events_path, flagged, reasons, redirect_seqs, "
                    "error_cluster_seqs, mark_seqs, domain, cwd, repo, repo_remote, counts, seqs, mode, settings, "
                    "json_set(summary, '$.summary.session_id', ?, '$.summary.parent', ?, '$.summary.agent_kind', 'sub'), "
                    "? FROM sessions WHERE rowid = ?", (child, child, sid, sid, rowid))
                added += 1
    return added


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--median-kb", type=int, default=420)
    ap.add_argument("--source", type=Path, default=_DEFAULT_SOURCE)
    ap.add_argument("--work", type=Path, default=HERE / "out" / "grouping")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--children", type=int, default=3, help="subagent rows added per tenth session (second part)")
    ap.add_argument("--base", type=Path, required=True, help="a worktree of main (its core/ is put on PYTHONPATH)")
    a = ap.parse_args()

    corpus, nxt, stamp = a.work / "corpus", a.work / "next", a.work / "corpus.json"
    wanted = {"size_mb": a.size_mb, "median_kb": a.median_kb, "seed": a.seed, "source": str(a.source.resolve())}
    data = a.work / "data"
    if not stamp.exists() or json.loads(stamp.read_text()) != wanted:
        shutil.rmtree(a.work, ignore_errors=True)
        corpus.mkdir(parents=True)
        build(corpus, nxt, sessions_of(a.source), a.size_mb, a.median_kb, a.seed)
        stamp.write_text(json.dumps(wanted))
    if not (data / "ledger.sqlite").exists():
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "rematch_trace.cli", "import", str(corpus), "--data", str(data),
                        "-q", "-j", str(a.jobs)], check=True, capture_output=True)
        print(f"cold import: {time.perf_counter() - t:.1f} s")
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMATCH_")}
    base_env = dict(env, PYTHONPATH=str(a.base / "core"))
    ours_cmds = {"sessions": ["sessions"], "sessions --flat": ["sessions", "--flat"],
                 "sessions --json": ["sessions", "--json"], "stats": ["stats"]}
    main_cmds = {"sessions": ["sessions"], "sessions --json": ["sessions", "--json"], "stats": ["stats"]}

    def part(title: str, ours_data: Path, main_data: Path) -> None:
        with sqlite3.connect(ours_data / "ledger.sqlite") as db:
            n, subs = db.execute("SELECT count(*), sum(agent_kind = 'sub') FROM sessions").fetchone()
        print(f"{title}: {n} sessions ({subs} under another), CPU s best of {a.repeat} (wall)")
        cpu_of(["--version"], env, 1)
        startup = cpu_of(["--version"], env, a.repeat)
        print(f"  rematch --version                {startup[1]:.3f} ({startup[0]:.3f})")
        got: dict[str, float] = {}
        for name, args in main_cmds.items():
            wall, cpu = cpu_of([*args, "--data", str(main_data)], base_env, a.repeat)
            got[f"main {name}"] = cpu
            print(f"  main   {name:<24} {cpu:.3f} ({wall:.3f})")
        for name, args in ours_cmds.items():
            wall, cpu = cpu_of([*args, "--data", str(ours_data)], env, a.repeat)
            ratio = f"  = {cpu / got[f'main {name}']:.2f}x main" if f"main {name}" in got else ""
            print(f"  group  {name:<24} {cpu:.3f} ({wall:.3f}){ratio}")

    main_data = a.work / "data-main"
    to_main(data, main_data)
    part("archive as imported", data, main_data)
    trees, trees_main = a.work / "data-trees", a.work / "data-trees-main"
    shutil.rmtree(trees, ignore_errors=True)
    _copy(data, trees)
    add_children(trees, a.children)
    to_main(trees, trees_main)
    part(f"with {a.children} subagent rows per tenth session", trees, trees_main)


if __name__ == "__main__":
    main()
