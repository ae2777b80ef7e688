"""Issue 40's search targets on an imported data folder: ``rematch search`` as a command and the query's own work.

    python bench/search_latency.py DATA [--before CHECKOUT [--before-data DATA2]] [--runs 21]

Each side is a checkout's ``core/`` first on ``PYTHONPATH`` (this checkout's by default) over a data folder
(``DATA``, or ``--before-data`` for the "before" side: an index of another version is rebuilt by a
command that can write, so each side keeps its own copy). The sides alternate run by run, so both see
the same minutes of a shared machine. Printed for each side:

- the command (a process of its own, start-up included; its bytecode cached as an install's is): median
  and p95 wall, and CPU (user + system, from ``wait4``: the load inflates it less than wall);
- the query's own work, in one process over the same queries: :meth:`SearchIndex.search` (the SQL, with
  the snippet and the rank), median and p95 wall and CPU;
- the load average before and after;
- with ``--sizes``: what each table and index of ``search.sqlite`` takes (SQLite's ``dbstat``).

It is a benchmark, not a test: nothing in the test suite is timed.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: Queries of each shape the command reads: common words, a phrase, a prefix, OR, a word left out, a miss.
QUERIES = ("error", "git status", "test failed", '"cannot find module"', "pytest", "fix*", "npm OR yarn",
           "commit -amend", "zzzznotthere", "def __init__ self")
#: The same as commands (a filter too).
COMMANDS = (("error",), ("git", "status"), ("--phrase", "cannot", "find", "module"), ("zzzznotthere",),
            ("--harness", "claude_code", "pytest"), ("--kind", "output", "fix*"))

_OWN = r"""
import json, sys, time
from pathlib import Path
from rematch_trace.store.search_index import SearchIndex, to_query
queries, runs = json.loads(sys.argv[2]), int(sys.argv[3])
out = {"wall": [], "cpu": []}
with SearchIndex(Path(sys.argv[1]), readonly=True) as ix:
    for q in queries:
        ix.search(to_query(q), limit=20)  # the pages this query reads, cached as a second run finds them
    for _ in range(runs):
        for q in queries:
            w, c = time.perf_counter(), time.process_time()
            ix.search(to_query(q), limit=20)
            out["wall"].append(time.perf_counter() - w)
            out["cpu"].append(time.process_time() - c)
print(json.dumps(out))
"""


def _env(code: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str((code / "core").resolve())
    return env


def command(code: Path, data: Path, args: tuple[str, ...]) -> tuple[float, float, int]:
    """Wall and CPU seconds and the exit status of one ``rematch search`` over ``data``."""
    t = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "rematch_trace.cli", "search", "--data", str(data), *args],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(code))
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read() if p.stderr is not None else b""
    if p.returncode not in (0, 1):
        raise SystemExit(f"rematch search {args}: exit {p.returncode}: {err.decode(errors='replace')[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, p.returncode


def own_work(code: Path, data: Path, runs: int) -> dict[str, list[float]]:
    """The query's own work over :data:`QUERIES`, ``runs`` times each, in one process of ``code``."""
    res = subprocess.run([sys.executable, "-c", _OWN, str(data / "search.sqlite"), json.dumps(QUERIES), str(runs)],
                         capture_output=True, text=True, env=_env(code), check=True)
    got: dict[str, list[float]] = json.loads(res.stdout)
    return got


def _p(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(len(s) * q))]


def sizes(index: Path) -> list[tuple[str, int]]:
    """Bytes of each table and index of ``index`` (its pages), largest first, with the file's total."""
    with sqlite3.connect(f"file:{index}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
        free = db.execute("PRAGMA freelist_count").fetchone()[0] * db.execute("PRAGMA page_size").fetchone()[0]
    return [(str(n), int(b)) for n, b in rows] + [("(free pages)", int(free)), ("(file)", index.stat().st_size)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", type=Path, help="an imported data folder (its index is synced by the command)")
    ap.add_argument("--before", type=Path, help="the checkout measured as 'before' (its core/ on PYTHONPATH)")
    ap.add_argument("--before-data", type=Path, help="the 'before' side's copy of the data folder")
    ap.add_argument("--runs", type=int, default=21, help="runs of each command (each side)")
    ap.add_argument("--own-runs", type=int, default=20, help="runs of each query in process (each side)")
    ap.add_argument("--sizes", action="store_true", help="the index's tables and indexes, each side")
    a = ap.parse_args()
    sides = {"after": (HERE.parent, a.data)}
    if a.before is not None:
        sides = {"before": (a.before, a.before_data or a.data), **sides}
    load0 = os.getloadavg()
    for code, data in sides.values():
        command(code, data, ("warm",))  # an index of another version is rebuilt here, not in a timed run
    cmd: dict[str, dict[str, list[float]]] = {s: {"wall": [], "cpu": []} for s in sides}
    for i in range(a.runs):
        for side in (list(sides) if i % 2 == 0 else list(sides)[::-1]):
            code, data = sides[side]
            for args in COMMANDS:
                wall, cpu, _ = command(code, data, args)
                cmd[side]["wall"].append(wall)
                cmd[side]["cpu"].append(cpu)
    own = {s: own_work(code, data, a.own_runs) for s, (code, data) in sides.items()}
    load1 = os.getloadavg()
    print(f"load average {load0[0]:.1f} before, {load1[0]:.1f} after; {os.cpu_count()} cores; python "
          f"{sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}; {a.runs} x {len(COMMANDS)} commands, "
          f"{a.own_runs} x {len(QUERIES)} queries in process, each side")
    for side in sides:
        c, o = cmd[side], own[side]
        print(f"{side:>6}: command wall median {statistics.median(c['wall']) * 1e3:.0f} ms, p95 "
              f"{_p(c['wall'], .95) * 1e3:.0f} ms; CPU median {statistics.median(c['cpu']) * 1e3:.0f} ms, p95 "
              f"{_p(c['cpu'], .95) * 1e3:.0f} ms | query's own work wall p50 {statistics.median(o['wall']) * 1e3:.1f} ms, "
              f"p95 {_p(o['wall'], .95) * 1e3:.1f} ms; CPU p50 {statistics.median(o['cpu']) * 1e3:.1f} ms, "
              f"p95 {_p(o['cpu'], .95) * 1e3:.1f} ms")
    if a.sizes:
        for side, (_, data) in sides.items():
            print(f"{side} search.sqlite: " + ", ".join(f"{n} {b / 1e6:.1f} MB" for n, b in sizes(data / "search.sqlite")))


if __name__ == "__main__":
    main()
