"""The watch benchmark: latency from append to ledger row, cost of a continuation, memory over time.

    python bench/watch.py                       # about 5 minutes
    python bench/watch.py --soak-seconds 3600   # a longer soak

Each part runs the real ``rematch watch`` on a temporary home laid out as the
three harnesses lay out theirs (``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``,
``HOME/.omp``), writes as a harness writes (one ``write`` of whole lines, then
close), and reads the ledger to see when a write has reached it:

1. latency: one line appended to a file of each harness in turn, each on its
   own (0.3 s apart), then new session files; the time from the write to the
   ledger row that covers it (trace, events and flags are written before that
   row commits);
2. big against small: one line appended alternately to a 100 MB and a 1 MB
   Claude Code transcript followed by the same watcher, the latency of each;
3. soak: thousands of files, one turn appended to a random one at a steady
   rate for a bounded time, the watcher's RSS sampled throughout.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import Claude, Codex, Omp, session_file  # noqa: E402

#: ``--poll``: the watcher polls instead of using file system events.
POLL = False


class Home:
    """A temporary home, its harness writers, and the ``rematch watch`` following it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        root.mkdir(parents=True, exist_ok=True)
        self.out = root / "out"
        self.writers: dict[Path, Any] = {}
        self.rng = random.Random(5)
        self.proc: subprocess.Popen[bytes] | None = None
        self.db: sqlite3.Connection | None = None
        self.stopped_in = 0.0

    def env(self) -> dict[str, str]:
        drop = ("REMATCH_", "PI_", "OMP_", "XDG_", "CLAUDE_", "CODEX_", "WATCHFILES_")
        env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
        env.update(HOME=str(self.home), REMATCH_LOAD_PLUGINS="claude_code,codex,omp",
                   CLAUDE_CONFIG_DIR=str(self.home / ".claude"), CODEX_HOME=str(self.home / ".codex"))
        return env

    def new_session(self, kind: str, turns: int = 2, result_bytes: int = 600) -> Path:
        """A new session file of ``kind``, written whole; its writer kept for appends."""
        sid = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        out: list[bytes] = []
        w: Any
        if kind == "claude_code":
            w = Claude(self.rng, sid)
            p = self.home / ".claude" / "projects" / f"-home-dev-p{self.rng.randint(0, 9)}" / f"{sid}.jsonl"
        elif kind == "codex":
            w = Codex(self.rng, sid)
            w.start(out)
            day = self.rng.randint(1, 28)
            p = self.home / ".codex" / "sessions" / "2026" / "02" / f"{day:02d}" / f"rollout-2026-02-{day:02d}T10-00-00-{sid}.jsonl"
        else:
            w = Omp(self.rng, sid)
            w.start(out)
            p = self.home / ".omp" / "agent" / "sessions" / f"--home-dev-p{self.rng.randint(0, 9)}--" / f"2026-03-01T00-00-00-000Z_{sid}.jsonl"
        for _ in range(turns):
            self._turn(kind, w, out, result_bytes)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"".join(out))
        self.writers[p] = (kind, w, [])
        return p

    @staticmethod
    def _turn(kind: str, w: Any, out: list[bytes], result_bytes: int) -> None:
        if kind == "claude_code":
            w.exchange(out, result_bytes)
        else:
            w.turn(out, result_bytes)

    def next_line(self, p: Path) -> bytes:
        """The next line the harness of ``p`` would write (whole turns, handed out a line at a time)."""
        kind, w, queue = self.writers[p]
        if not queue:
            self._turn(kind, w, queue, 600)
        line: bytes = queue.pop(0)
        return line

    def next_turn(self, p: Path) -> bytes:
        """The next whole turn of ``p`` (what is still queued of the current one first)."""
        kind, w, queue = self.writers[p]
        data = b"".join(queue)
        queue.clear()
        out: list[bytes] = []
        self._turn(kind, w, out, 600)
        return data + b"".join(out)

    def start(self, jobs: int = 2) -> None:
        """Start the watcher and wait until it watches."""
        self.log = self.root / "watch.log"
        argv = [sys.executable, "-m", "rematch_trace.cli", "watch", "--out", str(self.out), "-j", str(jobs),
                *(["--poll"] if POLL else [])]
        with open(self.log, "wb") as err:  # the child keeps its own copy of the descriptor
            self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=self.env())
        deadline = time.monotonic() + 600
        while "rematch: watching" not in self.log.read_text(errors="replace"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"rematch watch did not start: {self.log.read_text(errors='replace')}")
            time.sleep(0.05)
        self.db = sqlite3.connect(self.out / "ledger.sqlite", isolation_level=None, timeout=30)

    def recorded(self, p: Path) -> int:
        """The size the ledger row of ``p`` records: the size its last committed import started from.

        (Not the offset: a trailing line the plugin ignores, such as a Claude Code
        progress line, is read again by the next continuation, so the offset stays before it.)
        """
        assert self.db is not None
        # fetchall: a statement left unfinished would keep its read snapshot open.
        rows = self.db.execute(
            "SELECT size FROM sources WHERE path = ? AND outcome IN ('imported', 'resumed')", (str(p),)
        ).fetchall()
        return int(rows[0][0]) if rows else -1

    def append_and_time(self, p: Path, data: bytes, timeout: float = 60) -> float:
        """Append ``data`` to ``p``; seconds until the ledger row covers it."""
        t = time.perf_counter()
        with open(p, "ab") as f:
            f.write(data)
        return self.wait(p, p.stat().st_size, t, timeout)

    def wait(self, p: Path, size: int, t: float, timeout: float = 60) -> float:
        while self.recorded(p) != size:
            if time.perf_counter() - t > timeout:
                raise SystemExit(f"{p} not imported within {timeout}s: {self.log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.002)
        return time.perf_counter() - t

    def rss_mib(self) -> float:
        assert self.proc is not None
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        if self.db is not None:
            self.db.close()
        if self.proc is not None:
            t = time.perf_counter()
            self.proc.terminate()
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                raise SystemExit(f"rematch watch ignored SIGTERM for 120s: {self.log.read_text(errors='replace')[-3000:]}") from None
            self.stopped_in = time.perf_counter() - t


def fmt(values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
    return f"median {statistics.median(ms):7.1f} ms   p90 {p90:7.1f} ms   max {ms[-1]:7.1f} ms   (n={len(ms)})"


def latency(root: Path, appends: int) -> None:
    h = Home(root)
    files = [h.new_session(k) for k in ("claude_code", "codex", "omp")]
    h.start()
    try:
        per: dict[str, list[float]] = {}
        for i in range(appends):
            p = files[i % 3]
            per.setdefault(h.writers[p][0], []).append(h.append_and_time(p, h.next_line(p)))
            time.sleep(0.3)
        new: list[float] = []
        for i in range(max(3, appends // 4)):
            kind = ("claude_code", "codex", "omp")[i % 3]
            t = time.perf_counter()
            p = h.new_session(kind)
            new.append(h.wait(p, p.stat().st_size, t))
            time.sleep(0.3)
    finally:
        h.stop()
    allv = [v for vs in per.values() for v in vs]
    print(f"append one line -> ledger row       {fmt(allv)}")
    for kind, vs in sorted(per.items()):
        print(f"  {kind:<12}                      {fmt(vs)}")
    print(f"new session file -> ledger row      {fmt(new)}")


def big_small(root: Path, big_mb: int, appends: int) -> None:
    h = Home(root)
    rng = random.Random(3)
    files = {}
    for name, mb in (("big", big_mb), ("small", 1)):
        rel, data = session_file("claude_code", rng, mb * 1024 * 1024, 9000)
        p = h.home / ".claude" / "projects" / f"-home-dev-{name}" / Path(rel).name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        h.writers[p] = ("claude_code", Claude(rng, Path(rel).stem), [])
        files[name] = p
    t = time.perf_counter()
    h.start()
    h.wait(files["big"], files["big"].stat().st_size, t, 600)
    print(f"caught up {big_mb} MB + 1 MB in {time.perf_counter() - t:.1f}s")
    try:
        got: dict[str, list[float]] = {"big": [], "small": []}
        for i in range(appends * 2):
            name = ("big", "small")[i % 2]
            p = files[name]
            got[name].append(h.append_and_time(p, h.next_line(p)))
            time.sleep(0.3)
    finally:
        h.stop()
    sizes = {k: p.stat().st_size / 1e6 for k, p in files.items()}
    print(f"one line onto {sizes['big']:.0f} MB  -> ledger row    {fmt(got['big'])}")
    print(f"one line onto {sizes['small']:.1f} MB  -> ledger row    {fmt(got['small'])}")
    ratio = statistics.median(got["big"]) / statistics.median(got["small"])
    print(f"median big / small: {ratio:.2f}x")


def soak(root: Path, n_files: int, seconds: float, rate: float) -> None:
    h = Home(root)
    kinds = ("claude_code", "codex", "omp")
    files = [h.new_session(kinds[i % 3], turns=1, result_bytes=300) for i in range(n_files)]
    total = sum(p.stat().st_size for p in files)
    print(f"soak: {n_files} files, {total / 1e6:.0f} MB; one turn appended to a random file {rate:g} times a second "
          f"for {seconds:.0f}s")
    t = time.perf_counter()
    h.start()
    print(f"caught up in {time.perf_counter() - t:.1f}s")
    samples: list[tuple[float, float]] = []
    rng = random.Random(9)
    appended = 0
    last: dict[Path, int] = {}
    try:
        start = time.perf_counter()
        next_sample = start
        while (now := time.perf_counter()) - start < seconds:
            p = rng.choice(files)
            with open(p, "ab") as f:
                f.write(h.next_turn(p))
            last[p] = p.stat().st_size
            appended += 1
            if now >= next_sample:
                samples.append((now - start, h.rss_mib()))
                next_sample += max(1.0, seconds / 20)
            time.sleep(1 / rate)
        settle = time.perf_counter()
        for p, size in last.items():
            h.wait(p, size, settle, 120)
        samples.append((time.perf_counter() - start, h.rss_mib()))
    finally:
        h.stop()
    print(f"{appended} appends to {len(last)} files, all recorded; RSS of the watcher (MiB) over time:")
    print("  " + "  ".join(f"{s:.0f}s:{r:.1f}" for s, r in samples))
    warm = [r for s, r in samples if s >= seconds * 0.2]
    print(f"after the first fifth: min {min(warm):.1f}  max {max(warm):.1f}  last {samples[-1][1]:.1f} MiB; "
          f"stopped {h.stopped_in:.2f}s after SIGTERM")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--appends", type=int, default=45, help="appends measured for latency")
    ap.add_argument("--big-mb", type=int, default=100)
    ap.add_argument("--soak-files", type=int, default=3000)
    ap.add_argument("--soak-seconds", type=float, default=120)
    ap.add_argument("--rate", type=float, default=20, help="soak appends per second")
    ap.add_argument("--only", choices=["latency", "big", "soak"], default=None)
    ap.add_argument("--poll", action="store_true", help="run the watcher with --poll")
    args = ap.parse_args()
    global POLL
    POLL = args.poll
    print(f"python {sys.version.split()[0]}; {os.cpu_count()} cores; {'polling' if args.poll else 'file system events'}")
    root = Path(tempfile.mkdtemp(prefix="rematch-watch-bench-"))
    try:
        if args.only in (None, "latency"):
            latency(root / "latency", args.appends)
        if args.only in (None, "big"):
            big_small(root / "big", args.big_mb, max(10, args.appends // 2))
        if args.only in (None, "soak"):
            soak(root / "soak", args.soak_files, args.soak_seconds, args.rate)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
