"""What the import costs before the core's own work: reading alone, then reading and translating.

    python bench/floor.py CORPUS read        # the core's line reader, through each plugin's read hook
    python bench/floor.py CORPUS translate   # the same, plus each plugin's translation to neutral records

Neither writes anything: the synthesizer, the security events and the
ledger are left out. ``bench/run.py`` runs both beside the import, so the
share of each stage is measured on the same bytes in the same run.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from rematch_trace.host.source import RawRecord
from rematch_trace.importing.discovery import discover
from rematch_trace.importing.worker import worker_host as _host


def main() -> None:
    root, stage = Path(sys.argv[1]).resolve(), sys.argv[2]
    host = _host()
    started = time.perf_counter()
    items = 0
    for path, hint in discover(host, [root]):
        source = host.detect(Path(path), hint)
        if source is None:
            continue
        if stage == "read":
            for _ in host.read(source, 0):
                items += 1
        else:
            state: dict[str, Any] = {}
            lines = (x for x in host.read(source, 0) if isinstance(x, RawRecord))
            for _ in host.translate(source, lines, state):
                items += 1
    print(f"{items} items in {time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main()
