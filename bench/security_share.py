"""The security stream's share of a cold import, and before/after in one run.

    python bench/security_share.py CORPUS                       # this checkout
    python bench/security_share.py CORPUS --before OTHER/.venv  # and another checkout, interleaved

Runs cold imports of ``CORPUS`` with ``--jobs 1``, each as its own process into
a fresh folder: with the security events and with ``--no-events`` (the trace
alone, redaction included), for this checkout's ``rematch`` and, with
``--before``, for the ``rematch`` of another virtual environment (say, one
installed from ``main``). The runs alternate (A, A without events, B, B
without events, then again) so that a change in the machine's load falls on
both sides; each figure is the median of ``--rounds``. The share is
(with events - without) / with events, in CPU seconds of the import process
(user + system), which a shared machine disturbs less than wall time.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(exe: Path, corpus: Path, events: bool) -> tuple[float, float]:
    """(wall s, CPU s of the child) of one cold ``--jobs 1`` import into a fresh folder."""
    out = Path(tempfile.mkdtemp(prefix="rematch-share-"))
    cmd = [str(exe), "import", str(corpus), "--out", str(out), "--jobs", "1", "--quiet", "--json"]
    if not events:
        cmd.append("--no-events")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(out, ignore_errors=True)
    if res.returncode not in (0, 1):
        sys.stderr.write(res.stderr)
        raise SystemExit(f"{exe}: exit {res.returncode}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--before", type=Path, help="another virtual environment whose rematch is 'before'")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    here = Path(sys.executable).parent
    sides = {"after": here / "rematch"}
    if a.before is not None:
        sides = {"before": a.before / "bin" / "rematch", **sides}
    for exe in sides.values():
        if not exe.exists():
            raise SystemExit(f"no rematch at {exe}")
    size = sum(p.stat().st_size for p in a.corpus.rglob("*.jsonl"))
    os.sync()
    runs: dict[tuple[str, bool], list[tuple[float, float]]] = {(s, e): [] for s in sides for e in (True, False)}
    for _ in range(a.rounds):
        for side, exe in sides.items():
            for events in (True, False):
                runs[side, events].append(run(exe, a.corpus, events))
    print(f"corpus: {size / 1e6:,.0f} MB; --jobs 1; median of {a.rounds} rounds, interleaved; python {sys.version.split()[0]}")
    print(f"{'':8}{'with events':>24}{'without':>24}{'security share':>18}")
    print(f"{'':8}{'wall s':>12}{'CPU s':>12}{'wall s':>12}{'CPU s':>12}{'(CPU)':>18}")
    cpu_with: dict[str, float] = {}
    for side in sides:
        w = [statistics.median(x) for x in zip(*runs[side, True], strict=True)]
        n = [statistics.median(x) for x in zip(*runs[side, False], strict=True)]
        cpu_with[side] = w[1]
        share = (w[1] - n[1]) / w[1] if w[1] else 0.0
        print(f"{side:8}{w[0]:12.2f}{w[1]:12.2f}{n[0]:12.2f}{n[1]:12.2f}{share:17.1%}")
    if "before" in cpu_with:
        print(f"cold import CPU, after / before: {cpu_with['after'] / cpu_with['before']:.3f}")


if __name__ == "__main__":
    main()
