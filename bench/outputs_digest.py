"""Digests of an import's outputs on a corpus, cold, after +1% and rerun unchanged: to show two versions
write the same bytes.

    PYTHONPATH=<checkout>/core python bench/outputs_digest.py CORPUS WORK [--jobs N] > before.json
    python bench/outputs_digest.py CORPUS WORK > after.json
    python bench/outputs_digest.py --diff before.json after.json

Each trace, event stream and pending file by its SHA-256; each ledger session row (its source's mtime and
the stored summary's basis times left out, as are the index's inodes and mtimes: they differ between any two
runs); the search index's traces, sources, spans with their text, span ids, calls and turns. The +1% appends
the first 1% of each file's lines again (a grown file of the same records).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any


def _h(value: object) -> str:
    return hashlib.sha256(repr(value).encode()).hexdigest()[:16]


def digest(data: Path) -> dict[str, str]:
    """The outputs of the data folder ``data``, digested (see the module docstring)."""
    out: dict[str, str] = {}
    for sub in ("traces", "events", "pending"):
        for p in sorted((data / sub).glob("*")) if (data / sub).exists() else []:
            out[f"{sub}/{p.name}"] = hashlib.sha256(p.read_bytes()).hexdigest()[:16]
    with sqlite3.connect(data / "ledger.sqlite") as db:
        cols = [r[1] for r in db.execute("PRAGMA table_info(sessions)")]
        for r in db.execute("SELECT * FROM sessions ORDER BY harness, session_id"):
            row: dict[str, Any] = dict(zip(cols, r, strict=True))
            row.pop("source_mtime_ns", None)
            if row.get("summary"):
                value = json.loads(row["summary"])
                value["basis"] = value["basis"][:-1:2]  # the sizes, not the times
                row["summary"] = value
            out[f"ledger/{row['harness']}/{row['session_id']}"] = _h(sorted(row.items()))
    queries = {"traces": "SELECT key, size, end_off, started, session_id FROM traces",
               "sources": "SELECT path, size, end_off, streams FROM sources",
               "spans_text": "SELECT s.key, s.off, s.len, s.digest, s.src, t.body, t.kind, t.seq, t.t "
                             "FROM spans s JOIN text t ON t.rowid = s.id",
               "span_ids": "SELECT id, key, off FROM spans", "calls": "SELECT * FROM calls",
               "turns": "SELECT * FROM turns"}
    with sqlite3.connect(data / "search.sqlite") as db:
        for name, sql in queries.items():
            out[f"search/{name}"] = _h(sorted(db.execute(sql).fetchall(), key=repr))
    return out


def run(corpus: Path, work: Path, jobs: int) -> dict[str, dict[str, str]]:
    """Import a copy of ``corpus`` under ``work`` three times (cold, +1%, unchanged); each one's digests."""
    shutil.rmtree(work, ignore_errors=True)
    src, data = work / "src", work / "data"
    shutil.copytree(corpus, src)
    env = {**os.environ, "HOME": str(work / "home")}
    cmd = [sys.executable, "-m", "rematch_trace.cli", "import", "--data", str(data), "-q", "-j", str(jobs), str(src)]
    got = {}
    subprocess.run(cmd, env=env, capture_output=True, check=False)
    got["cold"] = digest(data)
    for p in sorted(src.rglob("*.jsonl")):
        body = p.read_bytes()
        lines = body.splitlines(keepends=True)
        if body.endswith(b"\n"):
            with open(p, "ab") as f:
                f.write(b"".join(lines[:max(1, len(lines) // 100)]))
    subprocess.run(cmd, env=env, capture_output=True, check=False)
    got["grown"] = digest(data)
    subprocess.run(cmd, env=env, capture_output=True, check=False)
    got["unchanged"] = digest(data)
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs=2, type=Path, help="CORPUS WORK, or with --diff two digest files")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--diff", action="store_true")
    a = ap.parse_args()
    if not a.diff:
        json.dump(run(a.paths[0], a.paths[1], a.jobs), sys.stdout, indent=1, sort_keys=True)
        return
    one, two = (json.loads(p.read_text()) for p in a.paths)
    differ = [f"{run_} {k}" for run_ in one for k in sorted(set(one[run_]) | set(two.get(run_, {})))
              if one[run_].get(k) != two.get(run_, {}).get(k)]
    print("\n".join(differ))
    print(f"differences: {len(differ)} of {sum(len(v) for v in one.values())}")


if __name__ == "__main__":
    main()
