"""Issue 40's table in one run: the import with everything on, beside the orjson parse of the same files.

    python bench/one_pass.py --size-mb 1024        # real Claude Code copies (bench/real_copies.py's archive)
    python bench/one_pass.py --size-mb 256 --skip-j1

Builds (or reuses) ``bench/real_copies.py``'s archive, then measures, each as its own process
and in this order: the orjson parse of every line (the floor), a cold import with every core,
the same with the stored summaries and the search index switched off (``--no-follow`` of
``bench/no_follow.py``), a cold import with one job, a rerun with nothing changed, a rerun
after +1% appended to every session (its own next lines), the first ``rematch report``,
``rematch search`` as a command, and the sizes of the data folder, ``search.sqlite`` and the
report site. Peak memory is sampled every 20 ms over the whole process tree (the sum of
its processes' RSS) beside the largest single process (``ru_maxrss``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from real_copies import _DEFAULT_SOURCE, build, grow, sessions_of, ungrow  # noqa: E402
from run import _MEASURE, corpus_size, parse_only  # noqa: E402


def _tree(pid: int) -> list[int]:
    """``pid`` and every process below it (read from /proc)."""
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, ()))
    return out


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def measure(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, float]:
    """Wall and CPU seconds, peak RSS of the largest process and of the whole tree (MiB), of ``cmd``.

    Run under run.py's measuring process (its own children's rusage: the command and its workers);
    the tree is sampled below that process, which is left out of the sum.
    """
    p = subprocess.Popen([sys.executable, "-c", _MEASURE, *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env)
    peak = 0
    while p.poll() is None:
        peak = max(peak, sum(_rss(q) for q in _tree(p.pid) if q != p.pid))
        time.sleep(0.02)
    out, err = p.communicate()
    wall, rss_kb, code, cpu = out.decode().split()
    if int(code) not in (0, 1):
        sys.stderr.write(err.decode(errors="replace")[-3000:])
        raise SystemExit(f"{cmd[:3]}: exit {code}")
    return {"wall": float(wall), "cpu": float(cpu), "rss": int(rss_kb) / 1024, "tree": peak / 2**20}


def tree_bytes(root: Path) -> int:
    """Bytes of the files under ``root``."""
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--work", type=Path, default=None, help="default: bench/out/real<size>")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--skip-j1", action="store_true", help="leave out the one-job cold import")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--code", type=Path, help="run the rematch of this checkout's core/ instead (PYTHONPATH): "
                                              "a 'before' measured beside the 'after' in the same minutes")
    a = ap.parse_args()
    work = a.work or HERE / "out" / f"real{a.size_mb}"
    corpus, nxt, stamp = work / "corpus", work / "next", work / "corpus.json"
    wanted = {"size_mb": a.size_mb, "median_kb": 420, "seed": 16, "source": str(_DEFAULT_SOURCE.resolve())}
    if not stamp.exists() or json.loads(stamp.read_text()) != wanted:
        shutil.rmtree(work, ignore_errors=True)
        corpus.mkdir(parents=True)
        build(corpus, nxt, sessions_of(_DEFAULT_SOURCE), a.size_mb, 420, 16)
        stamp.write_text(json.dumps(wanted))
    ungrow(corpus, work / "grown.json")
    for d in ("out1", "outN", "off", "site"):
        shutil.rmtree(work / d, ignore_errors=True)
    os.sync()
    size = corpus_size(corpus)
    exe = shutil.which("rematch", path=str(Path(sys.executable).parent)) or "rematch"

    def imp(out: str, jobs: int) -> list[str]:
        return [exe, "import", str(corpus), "--out", str(work / out), "--jobs", str(jobs), "--quiet", "--json"]

    env = None
    if a.code is not None:
        env = {**os.environ, "PYTHONPATH": str((a.code / "core").resolve())}
    rows: dict[str, dict[str, float]] = {}
    rows["parse"] = measure(parse_only(corpus))
    rows["cold"] = measure(env=env, cmd=imp("outN", a.jobs))
    rows["cold_off"] = measure(env=env, cmd=[sys.executable, str(HERE / "no_follow.py"), *imp("off", a.jobs)[1:]])
    if not a.skip_j1:
        rows["cold_j1"] = measure(env=env, cmd=imp("out1", 1))
    rows["rerun"] = measure(env=env, cmd=imp("outN", a.jobs))
    added, _ = grow(corpus, nxt, work / "grown.json")
    os.sync()
    rows["grown"] = measure(env=env, cmd=imp("outN", a.jobs))
    rows["report"] = measure(env=env, cmd=[exe, "report", "--data", str(work / "outN"), "--out", str(work / "site")])
    search = [measure(env=env, cmd=[exe, "search", "--data", str(work / "outN"), q]) for q in ("error", "git status", "zzzznotthere")
              for _ in range(3)]
    rows["search"] = {k: statistics.median(s[k] for s in search) for k in search[0]}
    sizes = {"transcripts": size, "appended": added, "data": tree_bytes(work / "outN"),
             "index": sum(p.stat().st_size for p in (work / "outN").glob("search.sqlite*")),
             "site": tree_bytes(work / "site"), "files": sum(1 for _ in corpus.rglob("*.jsonl"))}
    ungrow(corpus, work / "grown.json")
    # What the search query costs inside its process (the command's own work).
    from rematch_trace.store.search_index import SearchIndex, to_query

    own = []
    with SearchIndex(work / "outN" / "search.sqlite", readonly=True) as ix:
        for q in ("error", "git status", "test failed", '"cannot find module"', "zzzznotthere"):
            for _ in range(5):
                t = time.perf_counter()
                ix.search(to_query(q), limit=20)
                own.append(time.perf_counter() - t)
    own.sort()
    parse = rows["parse"]["wall"]
    gib = size / 2**30
    print(f"corpus: {size / 1e6:,.0f} MB in {sizes['files']:,} files (+{added / 1e6:.1f} MB appended); "
          f"{os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}; python {sys.version.split()[0]}")
    print(f"{'run':<28} {'wall s':>8} {'CPU s':>8} {'x parse':>8} {'max proc MiB':>12} {'tree MiB':>9}")
    for name, r in rows.items():
        print(f"{name:<28} {r['wall']:>8.2f} {r['cpu']:>8.2f} {r['wall'] / parse:>8.2f} {r['rss']:>12.0f} "
              f"{r['tree']:>9.0f}")
    print(f"+1% rerun / cold: {rows['grown']['wall'] / rows['cold']['wall']:.1%}; "
          f"first report / cold: {rows['report']['wall'] / rows['cold']['wall']:.2f}")
    print(f"data folder {sizes['data'] / 1e6:,.0f} MB ({sizes['data'] / 1e6 / gib:,.0f} MB per GiB), search.sqlite "
          f"{sizes['index'] / 1e6:,.0f} MB; report site {sizes['site'] / 1e6:,.0f} MB "
          f"({sizes['site'] / size:.0%} of the transcripts)")
    print(f"search query, own work: p50 {own[len(own) // 2] * 1e3:.1f} ms, p95 {own[int(len(own) * .95)] * 1e3:.1f} ms; "
          f"as a command: median {rows['search']['wall'] * 1e3:.0f} ms")
    if a.json:
        a.json.write_text(json.dumps({"rows": rows, "sizes": sizes, "own": own}, indent=1))


if __name__ == "__main__":
    main()
