"""What the approval guard costs: per event-channel request, per decision, per one-time code.

Run ``.venv/bin/python bench/approver_guard.py``. It starts a stand-in
harness (a python process running a script) with a child (a hook client),
and times with ``time.perf_counter``, in this process:

* ``note_client`` of an already seen harness (what every hook event pays);
* ``note_client`` of a first seen harness (once per harness);
* ``taint`` of this process (what a decision pays: its ancestry, each
  ancestor's program and cgroup);
* ``pty_masters``: the scan of every process's descriptors that a one-time
  code pays, with the number of processes on the machine.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rematch_trace.live import procs
from rematch_trace.live.approver_guard import Guard


def timed(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    """Median and 90th percentile of ``fn``'s wall time, in microseconds."""
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1e6)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.9)]


def main() -> None:
    """Print one line per figure."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "harness.py"
        script.write_text("import subprocess, sys\nsubprocess.run(['sleep', '30'])\n")
        harness = subprocess.Popen([sys.executable, str(script)])
        try:
            while True:
                kids = [p for p in os.listdir("/proc") if p.isdigit() and (s := procs.stat(int(p)))
                        and s.ppid == harness.pid]
                if kids:
                    break
                time.sleep(0.01)
            client = int(kids[0])
            guard = Guard()
            guard.note_client(client)
            med, p90 = timed(lambda: guard.note_client(client), 2000)
            print(f"note_client, harness already seen: median {med:.0f} us, p90 {p90:.0f} us")
            med, p90 = timed(lambda: Guard().note_client(client), 500)
            print(f"note_client, harness first seen:   median {med:.0f} us, p90 {p90:.0f} us")
            me = os.getpid()
            print(f"ancestry of this process: {len(procs.ancestry(me))} processes")
            med, p90 = timed(lambda: guard.taint(me), 500)
            print(f"taint (an untainted decider):      median {med:.0f} us, p90 {p90:.0f} us")
            master, slave = os.openpty()
            index = int(os.ttyname(slave).rsplit("/", 1)[1])
            count = sum(1 for p in os.listdir("/proc") if p.isdigit())
            med, p90 = timed(lambda: procs.pty_masters(index), 50)
            print(f"pty_masters over {count} processes:  median {med / 1000:.1f} ms, p90 {p90 / 1000:.1f} ms")
            os.close(master)
            os.close(slave)
        finally:
            harness.kill()
            harness.wait()


if __name__ == "__main__":
    main()
