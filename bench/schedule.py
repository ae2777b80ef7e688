"""Are both workers busy to the end? One cold import, each worker's files timed.

    python bench/schedule.py CORPUS [--jobs 2]

Runs ``rematch import CORPUS --jobs N`` in this process (into a temporary data
folder), with the local pool's per-file import wrapped so each forked worker
notes when it started and ended each file, then prints, per worker, its files,
the bytes it read, its busy time and when it finished, and the idle tail: how
long the first worker to finish waited for the last one. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()

    from rematch_trace.cli import main as rematch
    from rematch_trace.importing import pool
    from rematch_trace.importing.outcome import FileOutcome, WorkItem
    from rematch_trace.importing.settings import ImportSettings
    from rematch_trace.importing.worker import import_file

    with tempfile.TemporaryDirectory(prefix="rematch-schedule-") as tmp:
        log = Path(tmp) / "files.jsonl"
        imported = import_file

        def timed(item: WorkItem, settings: ImportSettings, data_root: str) -> FileOutcome:
            # Runs in a forked worker: appends one line per file (small appends do not interleave).
            start = time.perf_counter()
            outcome = imported(item, settings, data_root)
            with open(log, "a") as f:
                f.write(json.dumps([os.getpid(), item.path, item.work, start, time.perf_counter()]) + "\n")
            return outcome

        pool.import_file = timed  # type: ignore[attr-defined]  # the name the workers call
        sys.argv = ["rematch", "import", str(a.corpus), "--out", str(Path(tmp) / "data"),
                    "--jobs", str(a.jobs), "--quiet", "--json"]
        t0 = time.perf_counter()
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # the JSON summary is not ours to print
                rematch()
        except SystemExit as done:
            if done.code not in (0, 1, None):
                raise
        wall = time.perf_counter() - t0
        rows = [json.loads(line) for line in log.read_text().splitlines()]

    workers: dict[int, list[list[Any]]] = defaultdict(list)
    for row in rows:
        workers[row[0]].append(row)
    print(f"cold import --jobs {a.jobs}: {len(rows)} files in {wall:.2f} s")
    ends = []
    for n, (_pid, files) in enumerate(sorted(workers.items(), key=lambda kv: min(r[3] for r in kv[1])), 1):
        busy = sum(r[4] - r[3] for r in files)
        end = max(r[4] for r in files) - t0
        ends.append(end)
        biggest = ", ".join(f"{r[2] / 1e6:.0f}" for r in sorted(files, key=lambda r: -r[2])[:3])
        print(f"worker {n}: {len(files):>5} files {sum(r[2] for r in files) / 1e6:>7.0f} MB  busy {busy:>6.2f} s  "
              f"done at {end:>6.2f} s  (largest files, MB: {biggest})")
    if len(ends) > 1:
        print(f"idle tail: the first worker to finish waited {max(ends) - min(ends):.2f} s "
              f"({(max(ends) - min(ends)) / wall:.1%} of the run)")


if __name__ == "__main__":
    main()
