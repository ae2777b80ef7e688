"""Atomic replacement: the replaced file goes to a trash name, unlinked by a background thread."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: A process that replaces a file, with the reaper's unlink made slow, and exits at once.
_REPLACE_AND_EXIT = """
import os, sys, time
from pathlib import Path
from rematch_trace.store import datafolder

real_unlink = os.unlink
def slow_unlink(path, *a, **k):
    time.sleep(0.5)  # a loaded machine: the thread has not run yet when the command ends
    real_unlink(path, *a, **k)

target = Path(sys.argv[1])
f = datafolder.AtomicFile(target)
f.write(b"new\\n")
datafolder.os.unlink = slow_unlink
f.commit()
"""


def test_a_command_that_exits_at_once_leaves_no_trash(tmp_path: Path) -> None:
    """The last replaced file is gone when the process has exited, drained or not (the report never drains)."""
    target = tmp_path / "index.html"
    target.write_bytes(b"old\n")
    subprocess.run([sys.executable, "-c", _REPLACE_AND_EXIT, str(target)], check=True, timeout=60)
    assert target.read_bytes() == b"new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.html"]
