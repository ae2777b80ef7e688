"""What the export tests share: running ``rematch``, the corpus imported once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def rematch(*args: str, env: dict[str, str] | None = None,
            prefix: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """``rematch ARGS`` in its own process, with no ``OTEL_*`` variable but those in ``env`` (``prefix``: a
    command it runs under, as ``nsenter --net=...``)."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    e.update(env or {})
    return subprocess.run([*(prefix or []), sys.executable, "-m", "rematch_trace.cli", *args], capture_output=True,
                          text=True, env=e, timeout=300)
