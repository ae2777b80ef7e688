"""Atomic replacement: the replaced file goes to a trash name, unlinked by a background thread; small files replaced by one write."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

#: A process that replaces a file, with the reaper's unlink made slow, and exits at once.
_REPLACE_AND_EXIT = """
import os, sys, time
from pathlib import Path

import pytest
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


def test_write_atomic_replaces_a_small_file_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    from rematch_trace.store.datafolder import write_atomic

    target = tmp_path / "s.json"
    target.write_bytes(b"old\n")
    write_atomic(target, b"new\n")
    assert target.read_bytes() == b"new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]
    assert target.stat().st_mode & 0o777 == 0o600


def test_write_atomic_that_fails_keeps_the_old_file_and_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails (a full disk) leaves the target as it was, and its temporary removed."""
    from rematch_trace.store import datafolder

    target = tmp_path / "s.json"
    target.write_bytes(b"old\n")

    def full(fd: int, data: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(datafolder.os, "write", full)
    with pytest.raises(OSError):
        datafolder.write_atomic(target, b"new\n")
    monkeypatch.undo()
    assert target.read_bytes() == b"old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]
