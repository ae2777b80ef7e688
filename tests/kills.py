"""Killing the real ``rematch`` process at random moments, as SIGKILL (the OOM killer, ``kill -9``) does.

Shared by the tests that kill imports mid-way (``tests/hostile``, ``tests/claude_code``); pytest puts
this folder on ``sys.path`` with the root ``conftest.py``.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path


def wait_unlocked(out: str, timeout: float = 20) -> None:
    """Wait until every process of a killed run is gone: its forked workers hold the lock until they are."""
    lock = Path(out) / "import.lock"
    deadline = time.monotonic() + timeout
    while lock.exists():
        fd = os.open(lock, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            assert time.monotonic() < deadline, "the killed run's workers never went away"
            time.sleep(0.01)
        finally:
            os.close(fd)


def kill_after(cmd: list[str], delay: float, env: dict[str, str] | None = None) -> int | None:
    """Start ``cmd`` (an import with ``--out``) in its own process group and SIGKILL the whole group after
    ``delay`` s; its return code if it ended first, else ``None`` once its workers are gone too.

    A run that ended by itself must not have printed a traceback.
    """
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            start_new_session=True)
    try:
        proc.wait(timeout=delay)
        return proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        wait_unlocked(cmd[cmd.index("--out") + 1])
        if proc.stderr is not None:
            proc.stderr.close()
        return None
    finally:
        if proc.stderr is not None and not proc.stderr.closed:
            err = proc.stderr.read().decode(errors="replace")
            proc.stderr.close()
            assert "Traceback" not in err, err


class KillSchedule:
    """Runs to kill until at least ``runs`` ran and ``landed`` kills landed, up to ``bound`` runs.

    Iterating gives, per run, the factor to scale its delay by. A first run's time only guesses how
    long the next ones take (the machine's load changes under the test): a run that ended before its
    kill shortens the later delays, a kill that landed lengthens them again, back up to the guess.
    Tell each run's end with :meth:`ended`.
    """

    def __init__(self, runs: int, landed: int, bound: int) -> None:
        self.want_runs, self.want_landed, self.bound = runs, landed, bound
        self.runs = self.landed = 0
        self.scale = 1.0

    def __iter__(self) -> Iterator[float]:
        while self.runs < self.want_runs or self.landed < self.want_landed:
            self.runs += 1
            assert self.runs <= self.bound, f"only {self.landed} kills landed in {self.runs} runs"
            yield self.scale

    def ended(self, killed: bool) -> None:
        """The run just started was killed (``True``) or ended before its kill."""
        if killed:
            self.landed += 1
            self.scale = min(1.0, self.scale * 1.1)
        else:
            self.scale *= 0.7
