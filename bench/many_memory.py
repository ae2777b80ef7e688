"""Memory flat in the number of files: peak RSS at N files against N/10, in one run.

    python bench/many_memory.py --files 1000 10000 --median-kb 4 --jobs 2

For each count, generates (or reuses) ``bench/many_files.py``'s archive of that many small files, then
measures a cold import, a rerun with nothing changed and a rerun after +1% was appended to every file,
each as its own process, with the peak RSS of the largest process and of the whole process tree
(``bench/one_pass.py``'s sampler, every 20 ms). Prints each row and the ratio of the largest count's
figures to the smallest's (issue 40's target: within 1.3x).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import append_percent  # noqa: E402
from many_files import prepare_many  # noqa: E402
from one_pass import measure  # noqa: E402
from run import rematch  # noqa: E402

RUNS = ("cold", "unchanged", "grown")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--median-kb", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--regenerate", action="store_true")
    a = ap.parse_args()
    got: dict[int, dict[str, dict[str, float]]] = {}
    for n in a.files:
        work = HERE / "out" / f"many-{n}-{a.median_kb}"
        # (regenerated each time unless asked not to: the +1% rerun grows the archive)
        corpus = prepare_many(work, n, a.median_kb, regenerate=True)
        out = work / "out-mem"
        got[n] = {"cold": measure(rematch(corpus, out, a.jobs)), "unchanged": measure(rematch(corpus, out, a.jobs))}
        append_percent(corpus, 1.0)
        os.sync()
        got[n]["grown"] = measure(rematch(corpus, out, a.jobs))
    print(f"--jobs {a.jobs}, median {a.median_kb} KB; load average {os.getloadavg()[0]:.2f}")
    print(f"{'files':>7} {'run':<10} {'wall s':>8} {'CPU s':>8} {'max proc MiB':>12} {'tree MiB':>9}")
    for n, runs in got.items():
        for name in RUNS:
            r = runs[name]
            print(f"{n:>7} {name:<10} {r['wall']:>8.2f} {r['cpu']:>8.2f} {r['rss']:>12.1f} {r['tree']:>9.1f}")
    lo, hi = min(got), max(got)
    for name in RUNS:
        print(f"{name:<10} {hi}/{lo} files: largest process {got[hi][name]['rss'] / got[lo][name]['rss']:.2f}x, "
              f"tree {got[hi][name]['tree'] / got[lo][name]['tree']:.2f}x")


if __name__ == "__main__":
    main()
