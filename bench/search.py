"""Issue 32's search index and stored summaries, measured on real Claude Code sessions copied with fresh ids.

    python bench/search.py --size-mb 1024    # an archive built by bench/real_copies.py's builder, in bench/out/search

Measures, in one process (imports as ``rematch import`` runs them, with every core):

- the added cost of keeping the search index and the stored summaries (``follow_outputs``) to a cold
  import and to a rerun after +1% appended (the import timed with it switched off, then it alone);
- the index's size beside the archive's and the traces' bytes (and so per GiB of transcripts);
- search latency: the query alone (in process) and ``rematch search`` as a command;
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from real_copies import _DEFAULT_SOURCE, build, grow, sessions_of, ungrow  # noqa: E402
from run import corpus_size  # noqa: E402

QUERIES = ("error", "git status", "test failed", '"cannot find module"', "zzzznotthere")


def import_without_follow(corpus: Path, data_root: Path, jobs: int) -> float:
    """Seconds of an import with the summaries and index left alone (follow_outputs a no-op)."""
    import rematch_trace.store.follow as follow
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


def tree_bytes(root: Path) -> int:
    """Bytes of the files under ``root``."""
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=128)
    ap.add_argument("--median-kb", type=int, default=420)
    ap.add_argument("--source", type=Path, default=_DEFAULT_SOURCE)
    ap.add_argument("--work", type=Path, default=HERE / "out" / "search")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=32)
    a = ap.parse_args()

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
