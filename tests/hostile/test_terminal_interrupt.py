"""Issue 43: Ctrl-C during an import at a terminal leaves the terminal as it was.

The real ``rematch import`` runs on a pseudo-terminal (its stdin, stdout and stderr), so it draws its
progress bar, which hides the cursor; the test signals its process group as the terminal's Ctrl-C does
and reads everything the process wrote to the terminal.
"""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile_gen import cli_env, lines_for, path_for, sid_for, write

HIDE, SHOW = b"\x1b[?25l", b"\x1b[?25h"


def _read_until(fd: int, want: bytes, proc: subprocess.Popen[bytes], timeout: float) -> bytes:
    got = b""
    deadline = time.monotonic() + timeout
    while want not in got and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the other side closed (EIO on Linux)
                break
            if not chunk:
                break
            got += chunk
        elif proc.poll() is not None:
            break
    return got


def test_ctrl_c_at_a_terminal_shows_the_cursor_and_starts_a_new_line(tmp_path: Path) -> None:
    src = tmp_path / "src"
    for n in range(200):
        write(path_for(src, "claude_code", sid_for("claude_code", n)),
              lines_for("claude_code", sid_for("claude_code", n), turns=150))
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rematch_trace.cli", "import", str(src), "--data", str(tmp_path / "data"), "-j", "1"],
        stdin=slave, stdout=slave, stderr=slave, env=cli_env(TERM="xterm"), start_new_session=True,
    )
    os.close(slave)
    try:
        seen = _read_until(master, HIDE, proc, timeout=60)
        if HIDE not in seen:
            pytest.fail(f"no progress bar was drawn: {seen!r}")
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        seen += _read_until(master, b"\x00never", proc, timeout=30)
        assert proc.wait(timeout=30) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    # The cursor the bar hid is shown again, after the last time it was hidden.
    assert seen.rfind(SHOW) > seen.rfind(HIDE), seen[-400:]
    # The interrupt message is a line of its own, not glued onto the progress bar.
    text = seen.decode(errors="replace")
    line = next(ln for ln in re.split(r"\r\n|\n|\r", text) if "interrupted" in ln)
    assert line.startswith("rematch: interrupted (SIGINT)"), repr(line)
