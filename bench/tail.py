"""The transcript tail read at a live ``Stop``: one run's usage past a 40 MB tool output line.

``run_usage`` reads the transcript backwards to the run's prompt (runusage.py). A
tool output of tens of MB is one line; reading it must cost one pass over its
bytes and at most the line bound in memory. Prints the seconds and the traced
peak of one ``run_usage`` and of a bare backwards pass over the same file.

    python bench/tail.py [MB]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from rematch_claude_code import runusage


def _file(path: Path, mb: int) -> None:
    with path.open("wb") as f:
        f.write(b'{"type":"user","message":{"role":"user","content":"go"}}\n')
        f.write(b'{"type":"assistant","message":{"id":"m1","usage":{"output_tokens":3}}}\n')
        f.write(b'{"type":"user","message":{"content":[{"type":"tool_result","content":"')
        for _ in range(mb):
            f.write(b"x" * (1 << 20))
        f.write(b'"}]}}\n{"type":"assistant","message":{"id":"m2","usage":{"output_tokens":4}}}\n')


def _bare(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        pos = os.fstat(fd).st_size
        while pos > 0:
            step = min(runusage.CHUNK_BYTES, pos)
            pos -= step
            os.pread(fd, step, pos).rfind(b"\n")
    finally:
        os.close(fd)


def main() -> None:
    """Measure and print."""
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.jsonl"
        _file(path, mb)
        runs: list[tuple[str, Callable[[], object]]] = [("bare backwards pass", lambda: _bare(path)),
                                                        ("run_usage", lambda: runusage.run_usage(str(path)))]
        for name, fn in runs:
            best = min(_timed(fn) for _ in range(3))
            tracemalloc.start()
            fn()
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            print(f"{name:22} {mb} MB line: {best:.3f} s, peak {peak / 2**20:.1f} MiB")


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
