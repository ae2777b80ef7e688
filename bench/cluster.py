"""The batch import on a Dask LocalCluster beside the local pool, on one archive.

    python bench/cluster.py                              # 300 files around 200 KB (~70 MB)
    python bench/cluster.py --files 1000 --median-kb 500 --workers 1 2 4

Generates (or reuses) an archive like ``bench/many_files.py``'s under
``bench/out/dask-N-K``, then measures in one run, each import as its own
``rematch import`` process into a fresh data folder:

- the local executors: ``--jobs 1`` and ``--jobs`` = cores;
- ``--scheduler local:N`` for each ``--workers`` N: wall time as a user sees it
  (cluster start and close included); and the import alone on an already
  running LocalCluster of N, reached by its ``tcp://`` address as a remote
  scheduler is (from this process: the client side of ``rematch import``);
- the per-task overhead: empty tasks through the client and a one-worker
  cluster, one at a time (round trip) and all at once (throughput).

Every cluster run's outputs are checked byte for byte against ``--jobs 1``'s.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from many_files import prepare_many  # noqa: E402
from run import corpus_size, measure, rematch  # noqa: E402

# This file's name is the package's: past its siblings, "import dask" must find the package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]


def outputs(out: Path) -> dict[str, bytes]:
    """Every output file of a data folder, by relative path."""
    return {
        str(p.relative_to(out)): p.read_bytes()
        for folder in ("traces", "events", "pending") if (out / folder).is_dir()
        for p in sorted((out / folder).iterdir())
    }


def task_overhead(tasks: int) -> tuple[float, float]:
    """Milliseconds per empty import task on a one-worker LocalCluster: (one at a time, all at once)."""
    import logging

    from distributed import Client, LocalCluster, wait

    from rematch_trace.importing.cluster import run_task
    from rematch_trace.importing.settings import ImportSettings

    settings = ImportSettings()
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None,
                      silence_logs=logging.CRITICAL) as cluster, Client(cluster) as client:
        client.submit(run_task, [], settings, "/nonexistent", pure=False).result()  # warm
        started = time.perf_counter()
        for _ in range(tasks):
            client.submit(run_task, [], settings, "/nonexistent", pure=False).result()
        serial = (time.perf_counter() - started) / tasks
        started = time.perf_counter()
        wait([client.submit(run_task, [], settings, "/nonexistent", pure=False) for _ in range(tasks)])
        bulk = (time.perf_counter() - started) / tasks
    return serial * 1000, bulk * 1000


def on_running_cluster(corpus: Path, out: Path, workers: int) -> float:
    """Seconds to import ``corpus`` on a LocalCluster of ``workers`` started beforehand."""
    import logging

    import dask
    from distributed import LocalCluster

    from rematch_trace.importing.batch import ImportSettings, run_import
    from rematch_trace.store.datafolder import DataDir

    config = {"distributed.scheduler.allowed-failures": 0, "distributed.scheduler.worker-saturation": 1.0}
    with dask.config.set(config), LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None,
        silence_logs=logging.CRITICAL,
    ) as cluster:
        started = time.perf_counter()
        run_import([corpus], DataDir(out), ImportSettings(jobs=1), scheduler=cluster.scheduler_address)
        return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--median-kb", type=int, default=200)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--tasks", type=int, default=300, help="empty tasks for the overhead measure")
    ap.add_argument("--regenerate", action="store_true")
    a = ap.parse_args()

    work = HERE / "out" / f"dask-{a.files}-{a.median_kb}"
    corpus = prepare_many(work, a.files, a.median_kb, regenerate=a.regenerate)
    size = corpus_size(corpus)
    cores = os.cpu_count() or 1
    rows: list[tuple[str, float, float, str]] = []

    def run(name: str, cmd: list[str]) -> float:
        wall, _rss, code, err = measure(cmd)
        if code not in (0, 1):
            sys.stderr.write(err)
            raise SystemExit(f"{name}: exit {code}")
        return wall

    baseline = work / "out-jobs-1"
    wall_1 = run("--jobs 1", rematch(corpus, baseline, 1))
    rows.append(("local, --jobs 1", wall_1, size / 1e6 / wall_1, ""))
    expected = outputs(baseline)
    pool = work / f"out-jobs-{cores}"
    wall_pool = run(f"--jobs {cores}", rematch(corpus, pool, cores))
    rows.append((f"local pool, --jobs {cores}", wall_pool, size / 1e6 / wall_pool, ""))
    assert outputs(pool) == expected, "the local pool's outputs differ from --jobs 1's"
    for n in a.workers:
        out = work / f"out-local-{n}"
        cmd = [*rematch(corpus, out, 1), "--scheduler", f"local:{n}"]
        wall = run(f"local:{n}", cmd)
        if outputs(out) != expected:
            raise SystemExit(f"local:{n}: outputs differ from --jobs 1's")
        rows.append((f"--scheduler local:{n}", wall, size / 1e6 / wall, "cluster start and close included"))
        running = work / f"out-running-{n}"
        wall = on_running_cluster(corpus, running, n)
        if outputs(running) != expected:
            raise SystemExit(f"running cluster of {n}: outputs differ from --jobs 1's")
        rows.append((f"running LocalCluster({n})", wall, size / 1e6 / wall, "the import alone"))
    serial_ms, bulk_ms = task_overhead(a.tasks)

    print(f"archive: {a.files:,} files, {size / 1e6:,.1f} MB; {cores} cores; python {sys.version.split()[0]}")
    print(f"{'run':<28} {'wall s':>8} {'MB/s':>7}  notes")
    for name, wall, rate, note in rows:
        print(f"{name:<28} {wall:>8.2f} {rate:>7.1f}  {note}")
    print("every cluster run's outputs: byte-identical to --jobs 1's")
    print(f"per task (empty, one-worker LocalCluster): {serial_ms:.2f} ms one at a time, "
          f"{bulk_ms:.2f} ms each when {a.tasks} are submitted at once")
    by_name = {name: wall for name, wall, _rate, _note in rows}
    for n in a.workers:
        on_running = by_name[f"running LocalCluster({n})"]
        print(f"running LocalCluster({n}): {wall_1 / on_running:.2f}x the speed of --jobs 1, "
              f"{wall_pool / on_running:.2f}x the local pool's")


if __name__ == "__main__":
    main()
