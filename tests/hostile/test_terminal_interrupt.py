"""Issue 43, at a terminal: Ctrl-C during an import leaves the terminal as it was; tables fit its width.

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


def _on_terminal(args: list[str], columns: int) -> tuple[int, str]:
    """``rematch ARGS`` with its output on a pseudo-terminal ``columns`` wide; its status and what it drew."""
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = cli_env(TERM="xterm")
    env.pop("COLUMNS", None)
    proc = subprocess.Popen([sys.executable, "-m", "rematch_trace.cli", *args], stdin=slave, stdout=slave,
                            stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    os.close(slave)
    try:
        seen = _read_until(master, b"\x00never", proc, timeout=60)
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return code, seen.decode(errors="replace").replace("\r\n", "\n")


def test_tables_fit_the_terminal_and_wide_keeps_every_cell(tmp_path: Path) -> None:
    """Issue 43: ``sessions`` (grouped and flat), ``flagged`` and ``audit`` fit an 80-column terminal;
    ``--wide``, or a pipe, keeps every cell whole."""
    src, data = tmp_path / "src", tmp_path / "data"
    for n in range(3):
        sid = sid_for("claude_code", n)
        write(path_for(src, "claude_code", sid), lines_for("claude_code", sid, cwd=f"/work/a/rather/long/folder/name/{n}",
                                                             turns=2))
    example = next((Path(__file__).resolve().parents[2] / "examples" / "transcripts" / "claude_code").rglob("*.jsonl"))
    (src / "flagged").mkdir()
    (src / "flagged" / example.name).write_bytes(example.read_bytes())  # a session flagged for a redirect
    run = subprocess.run([sys.executable, "-m", "rematch_trace.cli", "import", str(src), "--data", str(data)],
                         env=cli_env(), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    for args in (["sessions"], ["sessions", "--flat"], ["flagged"], ["audit"]):
        code, text = _on_terminal([*args, "--data", str(data)], 80)
        lines = [line for line in text.split("\n") if line]
        assert code == 0 and len(lines) >= 3, text
        assert max(map(len, lines)) <= 80, text
        whole = {"sessions": sid_for("claude_code", 0), "flagged": example.stem, "audit": "rm -rf ./build ./dist ~/.cache"}[
            args[0]]
        code, text = _on_terminal([*args, "--data", str(data), "--wide"], 80)
        assert max(map(len, text.split("\n"))) > 80 and whole in text and "…" not in text, text
        piped = subprocess.run([sys.executable, "-m", "rematch_trace.cli", *args, "--data", str(data)],
                               env=cli_env(), capture_output=True, text=True, timeout=120)
        assert whole in piped.stdout and "…" not in piped.stdout
