"""Many small files: planning cost, per-file fixed cost, and memory that stays flat.

    python bench/many_files.py --files 2000 --median-kb 500     # sessions of 0.1-2 MB
    python bench/many_files.py --files 100000 --median-kb 4     # 100,000 small files

Generates (or reuses) an archive of ``--files`` real-shaped transcripts of the
three harnesses (sizes log-normal around ``--median-kb``) under
``bench/out/many-N-K``, then measures in one run, each as its own process:
a cold import with each ``--jobs`` value, a rerun with nothing changed, and a
rerun after about 1% was appended to every file; wall time and the peak RSS of
the largest process (the target: under 100 MB per process at any file count).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import append_percent, count_lines, session_file  # noqa: E402
from run import corpus_size, measure_cpu, rematch  # noqa: E402


def generate_many(root: Path, files: int, median_kb: int, seed: int = 5) -> int:
    """``files`` transcripts, 60% Claude Code, 25% Codex, 15% omp; return the bytes written."""
    rng = random.Random(seed)
    written = 0
    kinds = ["claude_code"] * 12 + ["codex"] * 5 + ["omp"] * 3
    for n in range(files):
        kind = kinds[n % len(kinds)]
        target = max(1500, int(rng.lognormvariate(0, 0.6) * median_kb * 1024))
        # Tool outputs scaled to the file, so a small file still holds several turns.
        result_bytes = max(200, min(9000, target // 8))
        rel, data = session_file(kind, rng, target, result_bytes)
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        written += len(data)
    return written


def prepare_many(work: Path, files: int, median_kb: int, *, regenerate: bool = False) -> Path:
    """The many-files archive under ``work/corpus``, generated once (again with ``regenerate``).

    Earlier runs' outputs (``work/out-*``) are removed and the disk synced, so
    every run starts from the same cold state. Returns the corpus folder.
    """
    corpus = work / "corpus"
    stamp = work / "corpus.json"
    if regenerate or not stamp.exists():
        shutil.rmtree(work, ignore_errors=True)
        corpus.mkdir(parents=True)
        generate_many(corpus, files, median_kb)
        stamp.write_text(json.dumps({"files": files, "median_kb": median_kb}))
    for d in work.glob("out-*"):
        shutil.rmtree(d)
    os.sync()
    return corpus


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--median-kb", type=int, default=500)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    ap.add_argument("--append-shape", choices=["lines", "bytes"], default="bytes",
                    help="+1%% of each file's bytes in whole exchanges, shorter lines where a file is small (default), or "
                         "+1%% of its lines with tool outputs sized to hold +1%% of its bytes where a turn allows: "
                         "see generate.append_percent")
    ap.add_argument("--regenerate", action="store_true")
    a = ap.parse_args()

    work = HERE / "out" / f"many-{a.files}-{a.median_kb}"
    corpus = prepare_many(work, a.files, a.median_kb, regenerate=a.regenerate)
    size = corpus_size(corpus)
    rows: list[tuple[str, float, float, float]] = []

    def row(name: str, cmd: list[str]) -> tuple[float, float]:
        wall, rss, code, err, cpu = measure_cpu(cmd)
        if code not in (0, 1):
            sys.stderr.write(err)
            raise SystemExit(f"{name}: exit {code}")
        rows.append((name, wall, cpu, rss))
        return wall, cpu

    cold = {j: row(f"cold import, --jobs {j}", rematch(corpus, work / f"out-{j}", j)) for j in a.jobs}
    last = a.jobs[-1]
    rerun = row(f"rerun, nothing changed, --jobs {last}", rematch(corpus, work / f"out-{last}", last))
    lines_before = count_lines(corpus)
    added, added_lines = append_percent(corpus, 1.0, shape=a.append_shape)
    os.sync()
    grown = {j: row(f"rerun after +1%, --jobs {j}", rematch(corpus, work / f"out-{j}", j)) for j in a.jobs}

    print(f"corpus: {a.files:,} files, {size / 1e6:,.0f} MB (+{added / 1e6:,.1f} MB appended, "
          f"{added / size:.2%}; +{added_lines:,} lines, {added_lines / lines_before:.2%}, shape {a.append_shape}); "
          f"{os.cpu_count()} cores; python {sys.version.split()[0]}")
    print(f"{'run':<36} {'wall s':>8} {'CPU s':>8} {'peak RSS MiB':>13}")
    for name, wall, cpu, rss in rows:
        print(f"{name:<36} {wall:>8.2f} {cpu:>8.2f} {rss:>13.0f}")
    for i, what in enumerate(("wall", "CPU")):
        ratios = "   ".join(f"+1% rerun / cold, {j} job{'s' if j > 1 else ''}: {grown[j][i] / cold[j][i]:.1%}"
                           for j in a.jobs)
        print(f"{what:>4}: rerun / cold: {rerun[i] / cold[last][i]:.1%}   {ratios}")


if __name__ == "__main__":
    main()
