"""The least a Python importer writing two streams could do, against the parse alone.

    python bench/python_floor.py FOLDER

Reads every ``*.jsonl`` under FOLDER twice over, alternating: once parsing
each line with orjson (the parse reference of ``bench/run.py``), once parsing
it, building one small record and one small event from it and writing both
with orjson to ``/dev/null``. The ratio of the two is the floor of any
pure-Python importer that writes a trace record and an event per line, before
it applies a single rule (prelabels, redaction, fingerprints, risk rules).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import orjson


def files_under(root: str) -> list[str]:
    """Every transcript under ``root``, sorted."""
    return sorted(os.path.join(r, f) for r, _, fs in os.walk(root) for f in fs if f.endswith(".jsonl"))


def parse(files: list[str]) -> None:
    """Parse every line."""
    for p in files:
        with open(p, "rb") as f:
            for line in f:
                orjson.loads(line)


def two_streams(files: list[str]) -> None:
    """Parse every line, and write one record and one event for it."""
    with open(os.devnull, "wb") as out:
        for p in files:
            with open(p, "rb") as f:
                for line in f:
                    d: Any = orjson.loads(line)
                    t = d.get("type") if type(d) is dict else None
                    rec = {"ev": t, "t": d.get("timestamp") if type(d) is dict else None, "n": len(line)}
                    out.write(orjson.dumps(rec) + b"\n")
                    out.write(orjson.dumps({"kind": t, "ts": rec["t"], "sid": "x"}) + b"\n")


def main() -> None:
    files = files_under(sys.argv[1])
    best: dict[str, float] = {}
    for fn in (parse, two_streams, parse, two_streams):
        start = time.process_time()
        fn(files)
        best[fn.__name__] = min(best.get(fn.__name__, 1e9), time.process_time() - start)
    print(f"parse {best['parse']:.2f} s CPU, two streams {best['two_streams']:.2f} s CPU: "
          f"{best['two_streams'] / best['parse']:.2f}x the parse")


if __name__ == "__main__":
    main()
