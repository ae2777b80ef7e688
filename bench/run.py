"""The import benchmark: one command, one table.

    python bench/run.py --size-mb 1024

Generates (or reuses) an archive under ``bench/out/corpus``, then measures, in
one run, wall time, throughput and the peak RSS of the largest process for:
a parse-only reference (orjson over every line, one process), two stages of
the import alone (``floor.py``: reading through the plugins, then reading and
translating), a cold import with ``--jobs 1``, a cold import with all cores, a
rerun with nothing changed, and reruns after appending about 1% to every file
(with all cores in that import's folder, then with one job in the ``--jobs 1``
import's folder: each compared with the cold import of the same job count).
With ``--stages``, two more cold ``--jobs 1`` imports: without the security
event stream, then without redaction either. Each run's CPU time (all its
processes) is reported beside its wall time, both as ratios to the parse.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import append_percent, count_lines, generate  # noqa: E402

_MEASURE = r"""
import resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
wall = time.perf_counter() - t
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
# CPU seconds of the command and every process it waited for (its workers): on a
# machine shared with others, a steadier measure than wall time.
sys.stdout.write(f"{wall} {usage.ru_maxrss} {p.returncode} {usage.ru_utime + usage.ru_stime}\n")
sys.stderr.write(p.stderr.decode(errors="replace")[-2000:])
"""

_PARSE = r"""
import sys, os, orjson
n = 0
for root, _, files in os.walk(sys.argv[1]):
    for name in files:
        if name.endswith(".jsonl"):
            with open(os.path.join(root, name), "rb") as f:
                for line in f:
                    if line.strip():
                        try:
                            orjson.loads(line)
                        except orjson.JSONDecodeError:
                            pass
                        n += 1
print(n)
"""


def measure(cmd: list[str]) -> tuple[float, float, int, str]:
    """(wall seconds, peak RSS MiB of the largest process, exit code, stderr tail)."""
    wall, rss, code, err, _cpu = measure_cpu(cmd)
    return wall, rss, code, err


def measure_cpu(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int, str, float]:
    """:func:`measure`, and the CPU seconds (user + system) of the command and its workers (run in ``env``)."""
    res = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], capture_output=True, text=True, env=env)
    wall, rss_kb, code, cpu = res.stdout.split()
    return float(wall), int(rss_kb) / 1024, int(code), res.stderr, float(cpu)


def rematch(corpus: Path, out: Path, jobs: int) -> list[str]:
    exe = shutil.which("rematch", path=str(Path(sys.executable).parent)) or "rematch"
    return [exe, "import", str(corpus), "--out", str(out), "--jobs", str(jobs), "--quiet", "--json"]


def parse_only(corpus: Path) -> list[str]:
    """The reference: orjson over every line of ``corpus``, in one process."""
    return [sys.executable, "-c", _PARSE, str(corpus)]


def corpus_size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*.jsonl"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--work", type=Path, default=HERE / "out")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--append-shape", choices=["lines", "bytes"], default="bytes",
                    help="+1%% of each file's bytes in whole exchanges, shorter lines where a file is small (default), or "
                         "+1%% of its lines with tool outputs sized to hold +1%% of its bytes where a turn allows: "
                         "see generate.append_percent")
    ap.add_argument("--regenerate", action="store_true")
    ap.add_argument("--stages", action="store_true",
                    help="also cold --jobs 1 imports without the event stream, then without redaction either")
    a = ap.parse_args()

    corpus = a.work / "corpus"
    stamp = a.work / "corpus.json"
    if a.regenerate or not stamp.exists() or json.loads(stamp.read_text()).get("size_mb") != a.size_mb:
        shutil.rmtree(a.work, ignore_errors=True)
        corpus.mkdir(parents=True)
        generate(corpus, a.size_mb)
        stamp.write_text(json.dumps({"size_mb": a.size_mb}))
    os.sync()  # no write-back of the archive competing with the runs
    for d in ("out1", "outN"):
        shutil.rmtree(a.work / d, ignore_errors=True)
    size = corpus_size(corpus)
    mb = size / 1e6
    rows: list[tuple[str, float, float, int, float, float]] = []

    def row(name: str, cmd: list[str], nbytes: float) -> float:
        wall, rss, code, err, cpu = measure_cpu(cmd)
        if code not in (0, 1):
            sys.stderr.write(err)
            raise SystemExit(f"{name}: exit {code}")
        rows.append((name, wall, nbytes / 1e6 / wall if wall else 0.0, code, rss, cpu))
        return wall

    row("parse only (orjson, 1 process)", parse_only(corpus), size)
    floor = str(HERE / "floor.py")
    row("  read through the plugins", [sys.executable, floor, str(corpus), "read"], size)
    row("  read + plugin translation", [sys.executable, floor, str(corpus), "translate"], size)
    if a.stages:
        # What the trace costs on top of reading and translating, with and without its redaction.
        for name, flags in (("  cold -j1, no events", ["--no-events"]),
                            ("  cold -j1, no events, no redaction", ["--no-events", "--no-redact"])):
            shutil.rmtree(a.work / "stage", ignore_errors=True)
            row(name, rematch(corpus, a.work / "stage", 1) + flags, size)
        shutil.rmtree(a.work / "stage", ignore_errors=True)
    cold1 = row("cold import, --jobs 1", rematch(corpus, a.work / "out1", 1), size)
    coldn = row(f"cold import, --jobs {a.jobs}", rematch(corpus, a.work / "outN", a.jobs), size)
    rerun = row("rerun, nothing changed", rematch(corpus, a.work / "outN", a.jobs), size)
    lines_before = count_lines(corpus)
    added, added_lines = append_percent(corpus, 1.0, shape=a.append_shape)
    os.sync()
    grown = row(f"rerun after +1% appended, --jobs {a.jobs}", rematch(corpus, a.work / "outN", a.jobs), added)
    # The same appended bytes, continued in the --jobs 1 cold import's data folder.
    grown1 = row("rerun after +1% appended, --jobs 1", rematch(corpus, a.work / "out1", 1), added)

    print(f"corpus: {mb:,.0f} MB in {sum(1 for _ in corpus.rglob('*.jsonl'))} files "
          f"(+{added / 1e6:,.1f} MB appended, {added / size:.2%}; +{added_lines:,} lines, "
          f"{added_lines / lines_before:.2%}, shape {a.append_shape}); {os.cpu_count()} cores; "
          f"python {sys.version.split()[0]}")
    # Ratios to the parse-only run, by wall time and by CPU time (user + system, all the
    # run's processes): on a machine shared with other work the CPU ratio moves less.
    parse_wall, parse_cpu = rows[0][1], rows[0][5]
    print(f"{'run':<34} {'wall s':>8} {'MB/s':>8} {'peak RSS MiB':>13} {'CPU s':>7} {'wall/parse':>10} {'CPU/parse':>9}")
    for name, wall, rate, _code, rss, cpu in rows:
        print(f"{name:<34} {wall:>8.2f} {rate:>8.1f} {rss:>13.0f} {cpu:>7.2f} "
              f"{wall / parse_wall:>10.2f} {cpu / parse_cpu:>9.2f}")
    print(f"rerun / cold: {rerun / coldn:.1%}   +1% rerun / cold: {grown / coldn:.1%} with {a.jobs} jobs, "
          f"{grown1 / cold1:.1%} with 1   speed-up 1->{a.jobs} jobs: {cold1 / coldn:.2f}x")


if __name__ == "__main__":
    main()
