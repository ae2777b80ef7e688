"""Driving the real ``rematch watch`` in a temporary home, and comparing it with a batch import.

The home holds each harness's default location, found through the variables
the plugins honour (``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``, and ``HOME`` for
omp's ``~/.omp/agent/sessions``), so the watcher and the reference import both
run without paths, as a user runs them.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hostile"))

from hostile_gen import dump, lines_for, sid_for

PLUGINS = "claude_code,codex,omp,pi"


class Home:
    """A temporary home with the three harnesses' default locations."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.home.mkdir(parents=True, exist_ok=True)

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a ``rematch`` run in this home (nothing of the real user's)."""
        drop = ("REMATCH_", "PYTEST_", "PI_", "OMP_", "XDG_", "CLAUDE_", "CODEX_", "WATCHFILES_")
        env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
        env.update(
            HOME=str(self.home), REMATCH_LOAD_PLUGINS=PLUGINS,
            CLAUDE_CONFIG_DIR=str(self.home / ".claude"), CODEX_HOME=str(self.home / ".codex"),
        )
        env.update(extra)
        return env

    def path(self, harness: str, n: int = 0) -> Path:
        """Where ``harness`` keeps session ``n`` in this home."""
        sid = sid_for(harness, n)
        if harness == "claude_code":
            return self.home / ".claude" / "projects" / "-work-project" / f"{sid}.jsonl"
        if harness == "codex":
            return self.home / ".codex" / "sessions" / "2026" / "02" / "10" / f"rollout-2026-02-10T21-00-00-{sid}.jsonl"
        return self.home / ".omp" / "agent" / "sessions" / "--home-dev-proj--" / f"2026-08-21T14-02-10-500Z_{sid}.jsonl"

    def lines(self, harness: str, n: int = 0, turns: int = 3) -> list[bytes]:
        """The lines of session ``n`` of ``harness``, each with its newline."""
        return [dump(x) for x in lines_for(harness, sid_for(harness, n), turns=turns)]


def append(path: Path, data: bytes) -> None:
    """Append as a harness does: one write, then close."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as f:
        f.write(data)


class Watch:
    """A running ``rematch watch`` process, its stderr in a file."""

    def __init__(self, home: Home, out: Path, *args: str, **env: str) -> None:
        self.out = out
        self.log = home.root / f"watch-{time.monotonic_ns()}.log"
        self._err: IO[bytes] = open(self.log, "wb")  # noqa: SIM115 (closed in stop)
        argv = [sys.executable, "-m", "rematch_trace.cli", "watch", "--out", str(out), "-v", *args]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=self._err, env=home.env(**env),
                                     start_new_session=True)

    @property
    def stderr(self) -> str:
        """What it has printed so far."""
        return self.log.read_text(errors="replace")

    def wait_for(self, text: str, timeout: float = 60) -> None:
        """Until ``text`` is in its stderr."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.stderr:
                return
            if self.proc.poll() is not None:
                pytest.fail(f"rematch watch ended ({self.proc.returncode}): {self.stderr}")
            time.sleep(0.02)
        pytest.fail(f"rematch watch never said {text!r}: {self.stderr}")

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 30) -> int:
        """Signal it and wait for its end; its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        try:
            code = self.proc.wait(timeout)
        finally:
            self._err.close()
        return code


def ledger_rows(out: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of a query on a data folder's ledger (none while it does not exist)."""
    path = out / "ledger.sqlite"
    if not path.exists():
        return []
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        return db.execute(sql, params).fetchall()
    except sqlite3.OperationalError:
        return []  # the tables are not made yet
    finally:
        db.close()


def settled(out: Path, path: Path, offset: int | None = None) -> bool:
    """Whether the ledger holds ``path`` at its current size, read up to ``offset`` (its end by default)."""
    size = path.stat().st_size
    rows = ledger_rows(out, "SELECT size, offset, outcome FROM sources WHERE path = ?", (str(path),))
    want = size if offset is None else offset
    return bool(rows) and rows[0][2] in ("imported", "resumed") and rows[0][1] == want and rows[0][0] == size


def wait_settled(out: Path, paths: list[Path], timeout: float = 60, watch: Watch | None = None) -> float:
    """Until every file is recorded to its end; the seconds it took."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if all(settled(out, p) for p in paths):
            return time.monotonic() - start
        if watch is not None and watch.proc.poll() is not None:
            pytest.fail(f"rematch watch ended ({watch.proc.returncode}): {watch.stderr}")
        time.sleep(0.01)
    state = ledger_rows(out, "SELECT path, size, offset, outcome FROM sources")
    pytest.fail(f"not settled in {timeout}s: {state}; sizes {[p.stat().st_size for p in paths]}"
                + (f"; stderr: {watch.stderr}" if watch else ""))


def batch_import(home: Home, out: Path, *paths: Path) -> subprocess.CompletedProcess[str]:
    """``rematch import`` of ``paths`` (else the home's default locations) into ``out``."""
    argv = [sys.executable, "-m", "rematch_trace.cli", "import", *map(str, paths), "--out", str(out), "--json",
            "-j", "1"]
    return subprocess.run(argv, capture_output=True, text=True, env=home.env(), timeout=120)


def outputs(out: Path) -> dict[str, bytes]:
    """Every trace, event and flag file of a data folder, by relative path."""
    found: dict[str, bytes] = {}
    for folder in ("traces", "events", "pending"):
        d = out / folder
        if d.is_dir():
            for p in sorted(d.iterdir()):
                if not p.name.startswith("."):
                    found[f"{folder}/{p.name}"] = p.read_bytes()
    return found


def ledger_view(out: Path) -> dict[str, list[tuple[Any, ...]]]:
    """The ledger's sessions, and its sources without what differs between a continuation and a whole read.

    (A continued source is ``resumed`` and its saved state names its journal generation.)
    """
    # A stored summary's basis names its files' mtimes, which differ between two folders: its summary must not.
    sessions = [tuple(orjson.loads(v)["summary"] if k == "summary" and v else v for k, v in zip(names, row, strict=True))
                for names in [[r[1] for r in ledger_rows(out, "PRAGMA table_info(sessions)")]]
                for row in ledger_rows(out, "SELECT * FROM sessions ORDER BY harness, session_id")]
    return {
        "sessions": sessions,
        "sources": ledger_rows(out, "SELECT path, harness, size, mtime_ns, head_fp, tail_fp, offset, malformed "
                                    "FROM sources ORDER BY path"),
    }


def assert_same_as_batch(home: Home, out: Path, ref: Path, *paths: Path) -> None:
    """The watcher's outputs and ledger equal a batch import of the final files (of ``paths``, if named)."""
    proc = batch_import(home, ref, *paths)
    assert proc.returncode == 0, proc.stderr
    assert outputs(out) == outputs(ref)
    assert ledger_view(out) == ledger_view(ref)
