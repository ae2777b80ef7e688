"""The report benchmark: is a refreshed report about as quick as the import rerun that precedes it?

    python bench/report.py --size-mb 256
    python bench/report.py --sessions 3000     # many small sessions instead
    python bench/report.py --sessions 3000 --reuse --repeat 5   # reruns only, on the last run's folder

Generates (or reuses) an archive under ``bench/out/report-corpus`` (no huge
files), imports it, then measures in one run, each as a separate process:

* the cold import and the cold report (every page written);
* ``--repeat`` rounds of: an import rerun with nothing changed and the report
  rerun after it (no page written); then, after appending whole exchanges to
  ``--changed`` percent of the files (other files each round), the import
  rerun and the report rerun (only the changed sessions' pages written).

It prints wall times and the ratios a reader needs, each from a pair measured
back to back: report rerun / import rerun per round and their median, and the
refreshed report / the cold report.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import RESULT_BYTES, exchange_maker, generate, omp_parent, session_file  # noqa: E402


def many(root: Path, sessions: int, seed: int = 3) -> int:
    """``sessions`` small sessions (about 40 KB each, the harness mix of the archive); return the bytes."""
    rng = random.Random(seed)
    written = 0
    for i in range(sessions):
        kind = ("claude_code", "claude_code", "claude_code", "codex", "omp")[i % 5]
        rel, data = session_file(kind, rng, 40_000, min(RESULT_BYTES[kind], 2000))
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        written += len(data)
    return written


def exe() -> str:
    return shutil.which("rematch", path=str(Path(sys.executable).parent)) or "rematch"


#: The commands run as an installed rematch runs: Python writes and reuses its bytecode. (This machine's
#: shells set PYTHONDONTWRITEBYTECODE, which makes every process compile its modules from source: a
#: fixed cost of a few tenths of a second on both sides of each ratio.)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    wall = time.perf_counter() - t
    if res.returncode not in (0, 1):
        sys.exit(f"{cmd[1]} failed ({res.returncode}): {res.stderr[-2000:]}")
    return wall, res.stdout


def grow(root: Path, percent: float, seed: int = 5) -> int:
    """Append one exchange to ``percent`` % of the files (at least one); return how many files."""
    rng = random.Random(seed)
    files = sorted(root.rglob("*.jsonl"))
    chosen = rng.sample(files, max(1, int(len(files) * percent / 100)))
    for p in chosen:
        kind = p.relative_to(root).parts[0]
        sid = p.stem.split("_")[-1][-36:]
        out: list[bytes] = []
        exchange_maker(kind, rng, sid, omp_parent(kind, p))(out, 2000)
        with open(p, "ab") as f:
            f.write(b"".join(out))
    return len(chosen)


def median(values: list[float]) -> float:
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=256)
    ap.add_argument("--changed", type=float, default=1.0, help="percent of files that grow before the rerun")
    ap.add_argument("--work", type=Path, default=HERE / "out")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--sessions", type=int, default=0,
                    help="instead of --size-mb, this many small sessions (the many-sessions case)")
    ap.add_argument("--repeat", type=int, default=5,
                    help="how many rounds of paired reruns (import rerun, then report rerun; nothing changed, "
                         "then after growing files)")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse the archive and data folder of an earlier run (no cold import or report)")
    a = ap.parse_args()
    corpus = a.work / "report-corpus"
    data = a.work / "report-data"
    imp = [exe(), "import", str(corpus), "--out", str(data), "--jobs", str(a.jobs), "--quiet", "--json"]
    rep = [exe(), "report", "--data", str(data)]
    rows: list[tuple[str, float, str]] = []
    if not (a.reuse and data.exists()):
        shutil.rmtree(corpus, ignore_errors=True)
        shutil.rmtree(data, ignore_errors=True)
        size = many(corpus, a.sessions) if a.sessions else generate(corpus, a.size_mb, big=False)
        for name, cmd in (("import, cold", imp), ("report, cold", rep)):
            wall, out = timed(cmd)
            rows.append((name, wall, out.strip().splitlines()[0] if cmd is rep else ""))
    else:
        size = sum(p.stat().st_size for p in corpus.rglob("*.jsonl"))
        timed(imp)
        timed(rep)  # settle what an earlier run left (a different rematch may have built the report)
    files = len(list(corpus.rglob("*.jsonl")))
    same: list[float] = []
    grew: list[float] = []
    grown = 0
    for r in range(a.repeat):
        # Each pair back to back, so both sides of a ratio meet the same load on a shared machine.
        wi, _ = timed(imp)
        wr, out = timed(rep)
        same.append(wr / wi)
        rows.append((f"[{r + 1}] import rerun, nothing changed", wi, ""))
        rows.append((f"[{r + 1}] report rerun, nothing changed", wr, out.strip().splitlines()[0]))
        grown = grow(corpus, a.changed, seed=5 + r)
        wi, _ = timed(imp)
        wr, out = timed(rep)
        grew.append(wr / wi)
        rows.append((f"[{r + 1}] import rerun, {grown} file(s) grown", wi, ""))
        rows.append((f"[{r + 1}] report rerun, {grown} file(s) grown", wr, out.strip().splitlines()[0]))
    sessions = json.loads(subprocess.run([exe(), "stats", "--out", str(data), "--json"], capture_output=True,
                                         text=True).stdout)["total"]["sessions"]
    print(f"archive: {size / 1e6:.0f} MB, {files} files, {sessions} sessions; jobs={a.jobs}")
    for name, wall, note in rows:
        print(f"  {name:<42} {wall:7.2f} s  {note}")
    print(f"  report rerun / import rerun, nothing changed: {' '.join(f'{x:.2f}' for x in same)}"
          f"  median {median(same):.2f}")
    print(f"  report rerun / import rerun, {grown} grown:  {' '.join(f'{x:.2f}' for x in grew)}"
          f"  median {median(grew):.2f}")
    cold = {name: wall for name, wall, _ in rows}.get("report, cold")
    if cold:
        last = [w for name, w, _ in rows if "report rerun" in name and "grown" in name]
        print(f"  report rerun ({grown} grown) / cold report, median: {median(last) / cold:.2f}")


if __name__ == "__main__":
    main()
