"""Issue 32's search index and stored summaries, measured on real Claude Code sessions copied with fresh ids.

    python bench/search.py --size-mb 1024    # an archive built by bench/real_copies.py's builder, in bench/out/search

Measures, in one process (imports as ``rematch import`` runs them, with every core):

- the added cost of keeping the search index and the stored summaries (``follow_outputs``) to a cold
  import and to a rerun after +1% appended (the import timed with it switched off, then it alone);
- the index's size beside the archive's and the traces' bytes (and so per GiB of transcripts);
- search latency: the query alone (in process) and ``rematch search`` as a command (issue 40's targets,
  before and after in one run, on an imported folder: ``bench/search_latency.py``);
- ``rematch sessions`` / ``stats`` / ``flagged`` reading stored summaries, against the same commands
  with the stored summaries cleared (what main does: every trace read and summarized).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from real_copies import _DEFAULT_SOURCE, build, grow, sessions_of, ungrow  # noqa: E402
from run import corpus_size  # noqa: E402

QUERIES = ("error", "git status", "test failed", '"cannot find module"', "zzzznotthere")


def import_without_follow(corpus: Path, data_root: Path, jobs: int) -> float:
    """Seconds of an import with the summaries and index left alone (follow_outputs a no-op)."""
    import rematch_trace.report.follow as follow
    from rematch_trace.importing.batch import run_import
    from rematch_trace.importing.settings import ImportSettings
    from rematch_trace.store.datafolder import DataDir

    real = follow.follow_outputs
    follow.follow_outputs = lambda *a, **k: None  # type: ignore[assignment]
    try:
        t, c = time.perf_counter(), _cpu()
        run_import([corpus], DataDir(data_root), ImportSettings(jobs=jobs), name_clean=False)
        # The pool's ended workers reaped now: else their CPU is counted when the next pool reaps them.
        multiprocessing.active_children()
        IMPORT_CPU.append(_cpu() - c)
        return time.perf_counter() - t
    finally:
        follow.follow_outputs = real


def _cpu() -> float:
    """CPU seconds of this process and its ended children (the source pass's workers)."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def follow_split(data_root: Path, jobs: int, pair: bool = False) -> tuple[float, float, object]:
    """Seconds of storing summaries, then of syncing the index (traces, then sources); the sync's figures.

    The source pass runs with ``jobs`` workers, as the import's ``follow_outputs`` runs it. ``pair``:
    first the same pass with one process on a copy of the folder (the same index state), for the pair.
    """
    from rematch_trace.importing import search_sources  # noqa: F401  (the sync's reader of sources)
    from rematch_trace.report.stored import store_summaries
    from rematch_trace.store.datafolder import DataDir
    from rematch_trace.store.search_index import SearchIndex, index_path

    data = DataDir(data_root)
    t = time.perf_counter()
    store_summaries(data)
    t1 = time.perf_counter()
    with SearchIndex(index_path(data), sources=False) as index:
        figures = index.sync(data)
    t2 = time.perf_counter()
    if pair:
        copy = data_root.parent / "pair"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(data_root, copy, symlinks=True)
        c, w = _cpu(), time.perf_counter()
        with SearchIndex(index_path(DataDir(copy))) as index:
            index.sync_sources(DataDir(copy), jobs=1)
        PAIR.append((time.perf_counter() - w, _cpu() - c))
        shutil.rmtree(copy)
        t2 = time.perf_counter()
    # What the conversation hook adds: the assistant's text and tool outputs from each source transcript.
    c = _cpu()
    with SearchIndex(index_path(data)) as index:
        figures_src = index.sync_sources(data, jobs=jobs)
    SOURCES.append((time.perf_counter() - t2, figures_src, _cpu() - c))
    return t1 - t, time.perf_counter() - t1, figures


#: CPU seconds (the workers' too) of each import_without_follow, in order.
IMPORT_CPU: list[float] = []
#: (seconds, figures, CPU seconds with the workers') of each follow_split's source indexing, in order.
SOURCES: list[tuple[float, object, float]] = []
#: (seconds, CPU seconds) of the cold source pass in one process, on a copy (``follow_split(pair=True)``).
PAIR: list[tuple[float, float]] = []


def cli(*args: str) -> tuple[float, float]:
    """Wall and CPU seconds of one ``rematch`` command (best of 3), its bytecode cached as an install's is."""
    import resource

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    best = (float("inf"), float("inf"))
    for _ in range(4):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "rematch_trace.cli", *args], check=False, capture_output=True, env=env)
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        best = (min(best[0], wall), min(best[1], cpu))
    return best


def latencies(index: Path) -> dict[str, float]:
    """Each of :data:`QUERIES` run on the index in process: the median of 5 runs, in seconds."""
    from rematch_trace.store.search_index import SearchIndex, to_query

    lat = {}
    with SearchIndex(index, readonly=True) as ix:
        for q in QUERIES:
            times = []
            for _ in range(5):
                t = time.perf_counter()
                ix.search(to_query(q), limit=20)
                times.append(time.perf_counter() - t)
            lat[q] = statistics.median(times)
    return lat


def tree_bytes(root: Path) -> int:
    """Bytes of the files under ``root``."""
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def child(mode: str, corpus: Path, data_root: Path, jobs: int) -> None:
    """One import as ``rematch import`` runs it, in this process (``--child``), its figures as JSON on stdout.

    ``mode`` ``on``: with the search index's source text (on a branch that has it, the workers hand the
    index their rows); ``off``: the stored summaries and the traces' index only (no source text, nothing
    handed over). Run with the checkout under test first on ``PYTHONPATH`` (``--ab``).
    """
    import resource

    import rematch_trace
    import rematch_trace.importing.batch as batch
    import rematch_trace.report.follow as follow
    from rematch_trace.host.loading import load_plugins
    from rematch_trace.importing.batch import run_import
    from rematch_trace.importing.settings import ImportSettings
    from rematch_trace.store.datafolder import DataDir

    load_plugins()
    real = follow.follow_outputs
    spent = [0.0, 0.0]

    def timed(data: DataDir, only: set[str] | None = None, jobs: int = 1, **kw: object) -> None:
        multiprocessing.active_children()  # the import's ended workers reaped first: their CPU is the import's
        w, c = time.perf_counter(), _cpu()
        if mode == "on":
            real(data, only, jobs, **kw)  # type: ignore[arg-type]
        else:
            from rematch_trace.report.stored import store_summaries
            from rematch_trace.store.search_index import SearchIndex, index_path

            store_summaries(data)
            with SearchIndex(index_path(data), sources=False) as index:
                index.sync(data, only)
        multiprocessing.active_children()
        spent[0], spent[1] = time.perf_counter() - w, _cpu() - c

    follow.follow_outputs = timed  # type: ignore[assignment]
    batch.HAND_OVER = mode == "on"  # type: ignore[attr-defined]
    load0 = os.getloadavg()[0]
    t, c = time.perf_counter(), _cpu()
    summary = run_import([corpus], DataDir(data_root), ImportSettings(jobs=jobs), name_clean=False)
    multiprocessing.active_children()
    me = resource.getrusage(resource.RUSAGE_SELF)
    out = {"wall": time.perf_counter() - t, "cpu": _cpu() - c, "follow_wall": spent[0], "follow_cpu": spent[1],
           "load": [load0, os.getloadavg()[0]], "maxrss_mb": me.ru_maxrss / 1024,
           "children_maxrss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
           "code": str(Path(rematch_trace.__file__).parents[2]), "counts": dict(summary.counts)}
    sys.stdout.write(json.dumps(out) + "\n")


def run_child(code: Path, mode: str, corpus: Path, data_root: Path, jobs: int,
              callgrind: Path | None = None) -> dict[str, Any]:
    """:func:`child` in a process of its own with ``code`` (a checkout) first on the path; with ``callgrind``
    (a folder), under valgrind's callgrind, the instructions of every process of it summed."""
    paths = [code / "core", *(code / "plugins" / p for p in ("claude_code", "codex", "omp", "gemini_cli", "opencode"))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, paths))}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", mode, "--corpus", str(corpus),
           "--data", str(data_root), "--jobs", str(jobs)]
    if callgrind is not None:
        shutil.rmtree(callgrind, ignore_errors=True)
        callgrind.mkdir(parents=True)
        cmd = ["valgrind", "--tool=callgrind", "--trace-children=yes", "--dump-instr=no",
               f"--callgrind-out-file={callgrind}/cg.%p", *cmd]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if res.returncode != 0:
        raise SystemExit(f"child {mode} of {code} failed:\n{res.stderr[-3000:]}")
    got: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    if callgrind is not None:
        total = 0
        for f in callgrind.glob("cg.*"):
            for line in f.read_text(errors="replace").splitlines():
                if line.startswith(("summary:", "totals:")):
                    total += int(line.split()[1])
                    break
        got["instructions"] = total
    return got


def ab(a: argparse.Namespace, corpus: Path, nxt: Path) -> None:
    """Paired A/B: ``--ab`` (main's checkout) against this checkout, on the same archive, in one run.

    For each side a cold import with the source text in the index (``on``) and one without (``off``: the
    summaries and the traces' index alone; nothing handed over, so it is the same work on both sides and
    is run once, with this checkout, unless ``--off-each``), each on a fresh data folder; then +1%
    appended and each folder's rerun. The source text's added cost is ``on`` less ``off``, in wall
    and CPU seconds (the workers' too), and with ``--callgrind`` in instructions (every process of it).
    """
    here = HERE.parent
    sides = {"main": a.ab.resolve(), "branch": here}
    runs = [("main", "on"), ("branch", "on"), ("branch", "off")]
    if a.off_each:
        runs.append(("main", "off"))
    cold: dict[tuple[str, str], dict[str, Any]] = {}
    rerun: dict[tuple[str, str], dict[str, Any]] = {}
    folders = {r: a.work / f"ab-{r[0]}-{r[1]}" for r in runs}
    for r in runs:
        shutil.rmtree(folders[r], ignore_errors=True)
    for rnd in range(a.rounds):
        for r in (runs if rnd % 2 == 0 else runs[::-1]):
            shutil.rmtree(folders[r], ignore_errors=True)
            cg = a.work / f"cg-{r[0]}-{r[1]}" if a.callgrind else None
            got = run_child(sides[r[0]], r[1], corpus, folders[r], a.jobs, cg)
            cold.setdefault(r, got) if rnd == 0 else cold[r].setdefault("again", got)
            print(f"cold {r[0]:6} {r[1]:3}: {_fmt(got)}", flush=True)
    added, _lines = grow(corpus, nxt, a.work / "grown.json")
    try:
        for r in runs:
            got = run_child(sides[r[0]], r[1], corpus, folders[r], a.jobs)
            rerun[r] = got
            print(f"+1%  {r[0]:6} {r[1]:3}: {_fmt(got)}", flush=True)
    finally:
        ungrow(corpus, a.work / "grown.json")
    size = corpus_size(corpus)
    print(f"archive {size / 1e6:,.0f} MB, +1% = {added / 1e6:.1f} MB, {a.jobs} jobs")
    for name, table in (("cold", cold), ("+1% rerun", rerun)):
        off = table[("main", "off")] if ("main", "off") in table else table[("branch", "off")]
        for side in ("main", "branch"):
            on = table[(side, "on")]
            own_off = table.get((side, "off"), off)
            w, c = float(on["wall"]) - float(own_off["wall"]), float(on["cpu"]) - float(own_off["cpu"])
            line = (f"{name}: {side} adds {w:.2f}s wall ({w / float(own_off['wall']):.1%}), {c:.2f}s CPU "
                    f"({c / float(own_off['cpu']):.1%}) for the source text")
            if "instructions" in on and "instructions" in own_off:
                n = int(on["instructions"]) - int(own_off["instructions"])
                line += f", {n / 1e9:.2f} G instructions ({n / int(own_off['instructions']):.1%})"
            print(line)
    idx = {side: sum(p.stat().st_size for p in folders[(side, "on")].glob("search.sqlite*")) for side in ("main", "branch")}
    gib = size / 2**30
    print("index: " + ", ".join(f"{s} {b / 1e6:.1f} MB ({b / 1e6 / gib:.0f} MB per GiB)" for s, b in idx.items()))
    data = folders[("branch", "on")]
    lat = latencies(data / "search.sqlite")
    print("search (query alone, median of 5): " + ", ".join(f"{q} {t * 1000:.1f} ms" for q, t in lat.items()))
    for q in ("zzzznotthere", '"cannot find module"', "error"):
        w, c = cli("search", "--data", str(data), q)
        print(f"rematch search {q} (the command, best of 4): {w:.2f}s wall, {c:.2f}s CPU")
    floor = cli("--version")
    print(f"rematch --version (start-up alone, best of 4): {floor[0]:.2f}s wall, {floor[1]:.2f}s CPU")


def _fmt(got: dict[str, Any]) -> str:
    s = (f"{got['wall']:.2f}s wall, {got['cpu']:.2f}s CPU (follow {got['follow_wall']:.2f}s, "
         f"{got['follow_cpu']:.2f}s CPU), load {got['load']}, maxrss {got['maxrss_mb']:.0f} MB")
    if "instructions" in got:
        s += f", {int(got['instructions']) / 1e9:.2f} G instructions"
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=128)
    ap.add_argument("--median-kb", type=int, default=420)
    ap.add_argument("--source", type=Path, default=_DEFAULT_SOURCE)
    ap.add_argument("--work", type=Path, default=HERE / "out" / "search")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=32)
    ap.add_argument("--ab", type=Path, help="main's checkout: paired A/B of the source text's added cost (see ab)")
    ap.add_argument("--off-each", action="store_true", help="with --ab: the import without source text on each side")
    ap.add_argument("--rounds", type=int, default=1, help="with --ab: cold imports per side (alternating order)")
    ap.add_argument("--callgrind", action="store_true", help="with --ab: instructions of each cold import (slow)")
    ap.add_argument("--child", choices=("on", "off"), help=argparse.SUPPRESS)
    ap.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child, a.corpus, a.data, a.jobs)
        return

    from rematch_trace.host.loading import load_plugins

    load_plugins()
    corpus, nxt, stamp = a.work / "corpus", a.work / "next", a.work / "corpus.json"
    wanted = {"size_mb": a.size_mb, "median_kb": a.median_kb, "seed": a.seed, "source": str(a.source.resolve())}
    if not stamp.exists() or json.loads(stamp.read_text()) != wanted:
        shutil.rmtree(a.work, ignore_errors=True)
        corpus.mkdir(parents=True)
        build(corpus, nxt, sessions_of(a.source), a.size_mb, a.median_kb, a.seed)
        stamp.write_text(json.dumps(wanted))
    ungrow(corpus, a.work / "grown.json")
    if a.ab:
        ab(a, corpus, nxt)
        return
    data = a.work / "data"
    shutil.rmtree(data, ignore_errors=True)
    size = corpus_size(corpus)

    cold = import_without_follow(corpus, data, a.jobs)
    sum_cold, idx_cold, fig_cold = follow_split(data, a.jobs, pair=True)
    index = data / "search.sqlite"
    with sqlite3.connect(data / "ledger.sqlite") as db:
        n_sessions = db.execute("SELECT count(*) FROM sessions").fetchone()[0]
    idx_bytes = sum(p.stat().st_size for p in data.glob("search.sqlite*"))
    traces = tree_bytes(data / "traces")

    lat = latencies(index)
    cli_search = cli("search", "--data", str(data), "git status")

    reads = {c: cli(c, "--data", str(data)) for c in ("sessions", "stats", "flagged")}
    # Main's way: no stored summary, every trace read (the same commands on a copy with them cleared).
    bare = a.work / "bare"
    shutil.rmtree(bare, ignore_errors=True)
    shutil.copytree(data, bare, symlinks=True)
    with sqlite3.connect(bare / "ledger.sqlite") as db:
        db.execute("UPDATE sessions SET summary = NULL")
    reads_bare = {c: cli(c, "--data", str(bare)) for c in ("sessions", "stats", "flagged")}
    shutil.rmtree(bare)

    nothing = import_without_follow(corpus, data, a.jobs)
    sum_same, idx_same, _ = follow_split(data, a.jobs)
    added, _lines = grow(corpus, nxt, a.work / "grown.json")
    grown = import_without_follow(corpus, data, a.jobs)
    sum_grow, idx_grow, fig_grow = follow_split(data, a.jobs)
    ungrow(corpus, a.work / "grown.json")

    gib = size / 2**30
    print(f"archive: {size / 1e6:,.0f} MB, {n_sessions:,} sessions ({a.jobs} jobs; +1% = {added / 1e6:.1f} MB); "
          f"traces {traces / 1e6:,.1f} MB; python {sys.version.split()[0]}")
    print(f"cold import {cold:.2f}s ({IMPORT_CPU[0]:.2f}s CPU); + summaries {sum_cold:.2f}s ({sum_cold / cold:.1%}) "
          f"+ index {idx_cold:.2f}s ({idx_cold / cold:.1%}) [{fig_cold}]")
    print(f"rerun, nothing changed {nothing:.2f}s; + summaries {sum_same:.3f}s + index {idx_same:.3f}s")
    print(f"+1% rerun {grown:.2f}s; + summaries {sum_grow:.2f}s ({sum_grow / grown:.1%}) "
          f"+ index {idx_grow:.2f}s ({idx_grow / grown:.1%}) [{fig_grow}]")
    (src_cold, fsc, cpu_cold), (src_same, _, _), (src_grow, fsg, cpu_grow) = SOURCES
    print(f"of which source text (assistant text, tool outputs; conversation_items; {a.jobs} jobs): cold "
          f"{src_cold:.2f}s, {cpu_cold:.2f}s CPU ({src_cold / cold:.1%} of the import's wall, {cpu_cold / IMPORT_CPU[0]:.1%} of its CPU) [{fsc}]; nothing changed "
          f"{src_same:.3f}s; +1% {src_grow:.2f}s, {cpu_grow:.2f}s CPU ({src_grow / grown:.1%} of the rerun) [{fsg}]")
    ((one_wall, one_cpu),) = PAIR
    print(f"the cold source pass in one process (the same folder, copied): {one_wall:.2f}s, {one_cpu:.2f}s CPU "
          f"({one_wall / cold:.1%} of the import's wall, {one_cpu / IMPORT_CPU[0]:.1%} of its CPU)")
    print(f"index: {idx_bytes / 1e6:.1f} MB = {idx_bytes / size:.1%} of the archive, {idx_bytes / traces:.0%} of the "
          f"traces; about {idx_bytes / 1e6 / gib:.0f} MB per GiB of transcripts")
    print("search (query alone, median of 5): " + ", ".join(f"{q} {t * 1000:.1f} ms" for q, t in lat.items()))
    floor = cli("--version")
    print(f"rematch --version (start-up alone, best of 4): {floor[0]:.2f}s wall, {floor[1]:.2f}s CPU")
    print(f"rematch search (the command, best of 4): {cli_search[0]:.2f}s wall, {cli_search[1]:.2f}s CPU")
    for c in reads:
        print(f"rematch {c}: {reads[c][0]:.2f}s wall / {reads[c][1]:.2f}s CPU with stored summaries, "
              f"{reads_bare[c][0]:.2f}s / {reads_bare[c][1]:.2f}s without ({reads_bare[c][1] / reads[c][1]:.1f}x CPU)")


if __name__ == "__main__":
    main()
