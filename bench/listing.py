"""The day-two commands (``sessions``, ``stats``, ``flagged``) on many stored summaries (issue 32's 0.2 s target).

    python bench/listing.py                       # 3,300 small sessions (the 1 GiB archive's count)
    python bench/listing.py --sessions 5000 --instructions
    python bench/listing.py --other /path/to/another/checkout/.venv/bin/python   # A/B, same data folder

Generates (or reuses) ``bench/out/listing`` with ``--sessions`` small sessions of the archive's harness mix,
imports it once (summaries are stored by the import), then measures each command as a separate process
with its bytecode cached as an install's is: CPU seconds (best of ``--repeat``) and, with
``--instructions``, valgrind's instruction count (repeatable whatever else the machine is doing). Beside
each, ``rematch --version`` (the interpreter, click and the command table) as the floor every command pays.
With ``--other``, the same commands through another interpreter (another checkout's venv), paired.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from report import many  # noqa: E402

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
COMMANDS = (("--version",), ("sessions",), ("stats",), ("flagged",))


def cpu(python: str, args: tuple[str, ...], data: Path, repeat: int) -> float:
    """Best CPU seconds (user + system) of ``rematch ARGS`` over ``repeat`` runs (after one to warm up)."""
    cmd = [python, "-m", "rematch_trace.cli", *args, *([] if args == ("--version",) else ["--data", str(data)])]
    subprocess.run(cmd, env=ENV, capture_output=True, check=False)
    best = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(cmd, env=ENV, capture_output=True, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best


def instructions(python: str, args: tuple[str, ...], data: Path) -> int:
    """Instructions of one run under valgrind's callgrind (the count, not the time)."""
    cmd = [python, "-m", "rematch_trace.cli", *args, *([] if args == ("--version",) else ["--data", str(data)])]
    with tempfile.TemporaryDirectory() as tmp:
        got = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg", *cmd], env=ENV,
                             capture_output=True, text=True, check=True)
    m = re.search(r"Collected : (\d+)", got.stderr)
    if m is None:
        raise SystemExit(f"no instruction count from valgrind: {got.stderr[-400:]}")
    return int(m.group(1))


def main() -> None:
    """Build or reuse the folder, then print the table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=3300)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--instructions", action="store_true", help="also count instructions with valgrind")
    ap.add_argument("--other", help="another interpreter (checkout) to measure on the same folder")
    ap.add_argument("--fresh", action="store_true", help="generate and import again")
    args = ap.parse_args()
    root = HERE / "out" / "listing"
    corpus, data = root / "corpus", root / "data"
    if args.fresh or not (data / "ledger.sqlite").exists():
        shutil.rmtree(root, ignore_errors=True)
        many(corpus, args.sessions)
        subprocess.run([sys.executable, "-m", "rematch_trace.cli", "import", str(corpus), "--data", str(data),
                        "--jobs", "2"], env=ENV, check=True, capture_output=True)
    pythons = [("this", sys.executable)] + ([("other", args.other)] if args.other else [])
    print(f"{args.sessions} sessions, load average {os.getloadavg()[0]:.1f}; CPU s best of {args.repeat}")
    for args_ in COMMANDS:
        cells = []
        for name, python in pythons:
            c = cpu(python, args_, data, args.repeat)
            cell = f"{name} {c:.3f} s"
            if args.instructions:
                cell += f" {instructions(python, args_, data) / 1e6:,.0f} M instr"
            cells.append(cell)
        print(f"{' '.join(args_):10}  " + "  |  ".join(cells))


if __name__ == "__main__":
    main()
