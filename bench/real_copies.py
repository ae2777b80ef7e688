"""Issue 16's own kind of archive: real Claude Code sessions copied with fresh ids, grown by their own next lines.

    python bench/real_copies.py --size-mb 1024                # about 1,900 sessions of 0.1-3 MB
    python bench/real_copies.py --size-mb 1024 --regenerate   # build the archive again (a run puts it back itself)

The issue measured its targets on 1 GiB of real Claude Code sessions copied
with fresh ids (1,925 files, 0.56 MB on average). This builds the like from
the real Claude Code transcripts of the shared corpus (``--source``, a
``~/.claude/projects``): each copy is one of its sessions, with its
subagents' files, cut after a number of its lines drawn so that sizes spread
log-normally around ``--median-kb``. Every UUID in a copy is replaced by a
fresh one (the same one throughout the copy, so that its links hold) and
every timestamp moved by the copy's own offset, so no two copies share a
session, a message or a minute.

The lines a copy was cut before are kept aside (``work/next``), and "+1%"
appends to every copied session its own next lines: 1% of the lines it has
(at least one), the real records its session wrote next, in their order.
Unlike ``bench/generate.py``'s shapes, the appended lines are the archive's
own kind, so 1% of the lines is about 1% of the bytes.

Then it measures in one run, each as its own process, as ``bench/run.py``
does: the orjson parse of every line, reading and translating alone
(``bench/floor.py``), a cold import with one job and with every core, a rerun
with nothing changed, and the reruns after the append (every core in the
all-cores import's folder, then one job in the one-job import's folder).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import re
import shutil
import sys
import uuid
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import count_lines  # noqa: E402
from run import corpus_size, measure_cpu, parse_only, rematch  # noqa: E402

_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIME = re.compile(rb"(20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d{1,6})?Z")
_DEFAULT_SOURCE = HERE.parent.parent / "shared" / "corpus" / "claude_code" / "projects"


class Session:
    """One real session of the source: its main transcript's lines and its subagents' files."""

    def __init__(self, main: Path) -> None:
        self.main = main
        self.project = main.parent.name
        self.lines = main.read_bytes().splitlines(keepends=True)
        sub = main.with_suffix("") / "subagents"
        self.subagents = sorted(sub.glob("*.jsonl")) if sub.is_dir() else []
        self.size = sum(len(line) for line in self.lines)


def sessions_of(source: Path) -> list[Session]:
    """The sessions under a ``~/.claude/projects``: every top-level transcript named by its session id."""
    found = [Session(p) for p in sorted(source.glob("*/*.jsonl")) if _UUID.fullmatch(p.stem.encode())]
    if not found:
        raise SystemExit(f"no Claude Code session under {source}")
    return found


class Copy:
    """What makes copy number ``n`` of a session its own: fresh UUIDs and times moved by its offset."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.ids: dict[bytes, bytes] = {}
        # Days apart, plus minutes so copies never share a minute of the day either.
        self.shift = timedelta(days=n, minutes=7 * n)

    def _id(self, m: re.Match[bytes]) -> bytes:
        old = m.group(0)
        new = self.ids.get(old)
        if new is None:
            digest = hashlib.sha256(b"%d:" % self.n + old).digest()[:16]
            new = self.ids[old] = str(uuid.UUID(bytes=digest, version=4)).encode()
        return new

    def _time(self, m: re.Match[bytes]) -> bytes:
        moved = datetime.strptime(m.group(1).decode(), "%Y-%m-%dT%H:%M:%S") + self.shift
        return moved.strftime("%Y-%m-%dT%H:%M:%S").encode() + (m.group(2) or b"") + b"Z"

    def line(self, line: bytes) -> bytes:
        """The line as this copy has it."""
        return _TIME.sub(self._time, _UUID.sub(self._id, line))

    def name(self, session_id: str) -> str:
        """A session id's fresh spelling in this copy."""
        return self._id(_UUID.fullmatch(session_id.encode())).decode()  # type: ignore[arg-type]


def build(corpus: Path, nxt: Path, sessions: list[Session], size_mb: int, median_kb: int, seed: int) -> int:
    """Write copies until ``size_mb`` MB, each cut where its drawn size falls; keep each one's next lines aside."""
    rng = random.Random(seed)
    want = size_mb * 1_000_000
    written = n = 0
    while written < want:
        target = max(2_000, int(rng.lognormvariate(0, 0.8) * median_kb * 1000))
        # The sessions with room to grow past the cut; the largest where none is big enough.
        roomy = [s for s in sessions if s.size > target * 1.03 and len(s.lines) > 3]
        s = rng.choice(roomy) if roomy else max(sessions, key=lambda x: x.size)
        have = cut = 0
        while cut < len(s.lines) and have < target:
            have += len(s.lines[cut])
            cut += 1
        grow = max(1, round(cut / 100))
        cut = min(cut, len(s.lines) - grow)
        copy = Copy(n)
        sid = copy.name(s.main.stem)
        rel = Path(s.project) / f"{sid}.jsonl"
        out = corpus / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "wb") as f:
            for line in s.lines[:cut]:
                written += f.write(copy.line(line))
        (nxt / rel).parent.mkdir(parents=True, exist_ok=True)
        (nxt / rel).write_bytes(b"".join(copy.line(line) for line in s.lines[cut:cut + grow]))
        for sub in s.subagents:
            target_sub = corpus / s.project / sid / "subagents" / sub.name
            target_sub.parent.mkdir(parents=True, exist_ok=True)
            with open(sub, "rb") as src, open(target_sub, "wb") as f:
                for line in src:
                    written += f.write(copy.line(line))
        n += 1
    return written


def grow(corpus: Path, nxt: Path, sizes: Path) -> tuple[int, int]:
    """Append every copy's next lines to it; return the bytes and lines appended.

    Each grown file's size before is kept in ``sizes`` first, so that :func:`ungrow`
    can put the archive back as it was built.
    """
    todo = sorted(nxt.rglob("*.jsonl"))
    sizes.write_text(json.dumps({str(p.relative_to(nxt)): (corpus / p.relative_to(nxt)).stat().st_size for p in todo}))
    added = lines = 0
    for p in todo:
        data = p.read_bytes()
        with open(corpus / p.relative_to(nxt), "ab") as f:
            f.write(data)
        added += len(data)
        lines += data.count(b"\n")
    return added, lines


def ungrow(corpus: Path, sizes: Path) -> None:
    """Cut the files an earlier run grew back to their size before (see :func:`grow`)."""
    if sizes.exists():
        for rel, size in json.loads(sizes.read_text()).items():
            os.truncate(corpus / rel, size)
        sizes.unlink()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--median-kb", type=int, default=420,
                    help="median session size (log-normal; the default gives the issue's 0.56 MB on average)")
    ap.add_argument("--source", type=Path, default=_DEFAULT_SOURCE, help="a ~/.claude/projects of real sessions")
    ap.add_argument("--work", type=Path, default=HERE / "out" / "real")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--regenerate", action="store_true")
    a = ap.parse_args()

    corpus, nxt, stamp = a.work / "corpus", a.work / "next", a.work / "corpus.json"
    wanted = {"size_mb": a.size_mb, "median_kb": a.median_kb, "seed": a.seed, "source": str(a.source.resolve())}
    if a.regenerate or not stamp.exists() or json.loads(stamp.read_text()) != wanted:
        shutil.rmtree(a.work, ignore_errors=True)
        corpus.mkdir(parents=True)
        build(corpus, nxt, sessions_of(a.source), a.size_mb, a.median_kb, a.seed)
        stamp.write_text(json.dumps(wanted))
    ungrow(corpus, a.work / "grown.json")
    for d in ("out1", "outN"):
        shutil.rmtree(a.work / d, ignore_errors=True)
    os.sync()  # no write-back of the archive competing with the runs
    size = corpus_size(corpus)
    files = sum(1 for _ in corpus.rglob("*.jsonl"))
    rows: list[tuple[str, float, float, float, float]] = []

    def row(name: str, cmd: list[str], nbytes: float) -> float:
        wall, rss, code, err, cpu = measure_cpu(cmd)
        if code not in (0, 1):
            sys.stderr.write(err)
            raise SystemExit(f"{name}: exit {code}")
        rows.append((name, wall, nbytes / 1e6 / wall if wall else math.nan, rss, cpu))
        return wall

    row("parse only (orjson, 1 process)", parse_only(corpus), size)
    floor = str(HERE / "floor.py")
    row("  read through the plugins", [sys.executable, floor, str(corpus), "read"], size)
    row("  read + plugin translation", [sys.executable, floor, str(corpus), "translate"], size)
    cold1 = row("cold import, --jobs 1", rematch(corpus, a.work / "out1", 1), size)
    coldn = row(f"cold import, --jobs {a.jobs}", rematch(corpus, a.work / "outN", a.jobs), size)
    rerun = row("rerun, nothing changed", rematch(corpus, a.work / "outN", a.jobs), size)
    lines_before = count_lines(corpus)
    added, added_lines = grow(corpus, nxt, a.work / "grown.json")
    os.sync()
    grown = row(f"rerun after +1% appended, --jobs {a.jobs}", rematch(corpus, a.work / "outN", a.jobs), added)
    grown1 = row("rerun after +1% appended, --jobs 1", rematch(corpus, a.work / "out1", 1), added)

    print(f"corpus: {size / 1e6:,.0f} MB in {files:,} files, copies of {a.source} "
          f"(+{added / 1e6:,.1f} MB appended, {added / size:.2%}; +{added_lines:,} lines, "
          f"{added_lines / lines_before:.2%}); {os.cpu_count()} cores; python {sys.version.split()[0]}")
    parse_wall, parse_cpu = rows[0][1], rows[0][4]
    print(f"{'run':<38} {'wall s':>8} {'MB/s':>8} {'peak RSS MiB':>13} {'CPU s':>7} {'wall/parse':>10} {'CPU/parse':>9}")
    for name, wall, rate, rss, cpu in rows:
        print(f"{name:<38} {wall:>8.2f} {rate:>8.1f} {rss:>13.0f} {cpu:>7.2f} "
              f"{wall / parse_wall:>10.2f} {cpu / parse_cpu:>9.2f}")
    print(f"rerun / cold: {rerun / coldn:.1%}   +1% rerun / cold: {grown / coldn:.1%} with {a.jobs} jobs, "
          f"{grown1 / cold1:.1%} with 1   speed-up 1->{a.jobs} jobs: {cold1 / coldn:.2f}x")


if __name__ == "__main__":
    main()
