"""The floor of a +1% rerun: what continuing a grown file costs before any rule runs.

    python bench/real_copies.py --size-mb 1024      # first: builds, imports and grows the archive
    python bench/rerun_floor.py                     # then: the floor, per grown file and against the cold import
    python bench/rerun_floor.py --cold-cpu 21.6     # with a cold import's CPU seconds measured in the same sitting

Issue 16's target 2 asks a rerun after +1% was appended to every file to cost
at most 5% of the cold import. This measures, on ``bench/real_copies.py``'s
grown archive (its ``--work`` folder: the corpus as grown, ``grown.json``
with each grown file's size before, and ``out1``'s ledger with the saved
states the one-job import left), the work every continued file needs
whatever the rules cost, in one process with nothing of rematch imported:

- the source's ``stat`` and its ledger row (all rows read once, as planning does);
- the new bytes read from the old end and parsed, line by line, with orjson;
- the file's saved state (the very bytes the ledger holds) parsed with orjson,
  not typed, and serialised again for the ledger;
- a rollback journal entry written before the outputs change, and removed after;
- for each stream the saved state names (a session, or a subagent's), its
  trace and its events opened and appended to (the parsed lines, written back);
- the ledger row updated, committed every 64 files (SQLite in WAL mode with
  ``synchronous=NORMAL``, as the ledger is).

No rule runs: no translation, no synthesizer, no event sink, no redaction, no
digest. Each round restores the scratch folder (untimed) and times the loop
by the process's CPU time. The figures are a lower bound of a continuation in
this design (one trace and one event stream per session, a saved state per
file, the journal that keeps a crash from leaving half an output); the
difference between it and a real rerun is what the rules and rematch's own
plumbing cost.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from real_copies import grow, ungrow  # noqa: E402
from run import measure_cpu, rematch  # noqa: E402

#: Rows committed together, as a batch of the ledger's writes would be.
COMMIT_EVERY = 64


class Grown:
    """One grown file: its path, its size before, its saved state and its streams."""

    def __init__(self, path: Path, before: int, saved: bytes) -> None:
        self.path = path
        self.before = before
        self.saved = saved
        state = orjson.loads(saved) if saved else {}
        streams = state.get("streams") if isinstance(state, dict) else None
        #: How many streams the continuation reopens (at least one).
        self.streams = max(1, len(streams) if isinstance(streams, dict) else 0)


def grown_files(work: Path) -> list[Grown]:
    """The archive's grown files with the saved states of ``work/out1``'s ledger."""
    sizes = work / "grown.json"
    ledger = work / "out1" / "ledger.sqlite"
    if not sizes.exists() or not ledger.exists():
        sys.exit(f"{work}: no grown archive with its one-job import; run bench/real_copies.py first")
    con = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
    saved = {Path(p).resolve(): bytes(s or b"") for p, s in con.execute("SELECT path, saved FROM sources")}
    con.close()
    corpus = (work / "corpus").resolve()
    out = []
    for rel, before in sorted(json.loads(sizes.read_text()).items()):
        path = corpus / rel
        out.append(Grown(path, before, saved.get(path, b"")))
    return out


def set_up(scratch: Path, files: list[Grown]) -> sqlite3.Connection:
    """A ledger holding each file's row as before the growth, and each stream's outputs."""
    shutil.rmtree(scratch, ignore_errors=True)
    (scratch / "traces").mkdir(parents=True)
    (scratch / "events").mkdir()
    (scratch / "journal").mkdir()
    db = sqlite3.connect(scratch / "ledger.sqlite")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE sources (path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, "
               "offset INTEGER, saved BLOB)")
    db.executemany("INSERT INTO sources VALUES (?, ?, 0, ?, ?)",
                   [(str(f.path), f.before, f.before, f.saved) for f in files])
    db.commit()
    for i, f in enumerate(files):
        for s in range(f.streams):
            for kind in ("traces", "events"):
                (scratch / kind / f"{i}-{s}.jsonl").write_bytes(b"{}\n" * 64)
    return db


def continue_all(scratch: Path, files: list[Grown], db: sqlite3.Connection) -> float:
    """Continue every grown file as the floor does; the CPU seconds it took."""
    start = time.process_time()
    rows = {p: (size, offset, saved) for p, size, offset, saved in
            db.execute("SELECT path, size, offset, saved FROM sources")}
    loads, dumps = orjson.loads, orjson.dumps
    for i, f in enumerate(files):
        name = str(f.path)
        st = os.stat(name)
        size, offset, saved = rows[name]
        if st.st_size == size:
            continue
        with open(name, "rb") as src:
            src.seek(offset)
            new = src.read()
        records = [loads(line) for line in new.splitlines() if line.strip()]
        state = loads(saved) if saved else {}
        outs = [scratch / kind / f"{i}-{s}.jsonl" for s in range(f.streams) for kind in ("traces", "events")]
        entry = scratch / "journal" / str(i)
        entry.write_bytes(dumps({"source": name, "files": {str(p): p.stat().st_size for p in outs}}))
        written = b"".join(dumps(r) + b"\n" for r in records)
        for p in outs:
            with open(p, "ab") as out:
                out.write(written)
        db.execute("UPDATE sources SET size = ?, mtime_ns = ?, offset = ?, saved = ? WHERE path = ?",
                   (st.st_size, st.st_mtime_ns, st.st_size, dumps(state), name))
        if i % COMMIT_EVERY == COMMIT_EVERY - 1:
            db.commit()
        entry.unlink()
    db.commit()
    return time.process_time() - start


def cold_cpu(work: Path) -> float:
    """A one-job cold import's CPU seconds of the archive as built (put back grown after)."""
    corpus = work / "corpus"
    sizes = work / "grown.json"
    ungrow(corpus, sizes)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            _, _, code, err, cpu = measure_cpu(rematch(corpus, Path(tmp) / "out", 1))
            if code:
                sys.exit(f"cold import failed: {err.strip()}")
    finally:
        grow(corpus, work / "next", sizes)
    return cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=HERE / "out" / "real", help="bench/real_copies.py's --work")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cold-cpu", type=float, help="a one-job cold import's CPU seconds (else measured here)")
    a = ap.parse_args()
    files = grown_files(a.work)
    streams = sum(f.streams for f in files)
    added = sum(f.path.stat().st_size - f.before for f in files)
    cold = a.cold_cpu if a.cold_cpu is not None else cold_cpu(a.work)
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.rounds):
            db = set_up(Path(tmp) / "floor", files)
            times.append(continue_all(Path(tmp) / "floor", files, db))
            db.close()
    print(f"{len(files):,} grown files ({streams:,} streams, +{added / 1e6:.1f} MB), {a.rounds} rounds; "
          f"cold import, --jobs 1: {cold:.2f} s CPU")
    for label, t in (("fastest", min(times)), ("median", statistics.median(times))):
        print(f"floor, {label:7}: {t:.3f} s CPU = {1000 * t / len(files):.3f} ms a grown file "
              f"= {100 * t / cold:.1f}% of the cold import")
    print(f"target 2 (5% of cold) leaves {1000 * 0.05 * cold / len(files):.3f} ms a grown file "
          "for everything: start-up, the new bytes' own work and every rule's state")


if __name__ == "__main__":
    main()
