"""Where pi keeps its sessions, and which files of the format it shares with omp are pi's.

pi (``config.ts``) keeps its agent folder in ``$PI_CODING_AGENT_DIR``, else ``~/.pi/agent``, and
its sessions in ``<agent>/sessions/--<cwd>--/``; ``PI_CODING_AGENT_SESSION_DIR`` (or
``--session-dir``) puts them in one other folder. omp reads the same two variables, so a folder
they name is omp's too: both plugins name it and the core asks both about its files, which
``rematch_omp.discover.writer`` tells apart. A ``sessionDir`` set in pi's ``settings.json`` is
not read: name that folder to ``rematch import``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from rematch_omp.discover import claim
from rematch_trace.host.source import Location, Source

HARNESS = "pi"


def session_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """The folders pi writes sessions into, given an environment and a home (existing or not)."""
    roots: list[Path] = []
    flat = env.get("PI_CODING_AGENT_SESSION_DIR", "").strip()
    if flat:
        roots.append(Path(flat).expanduser())
    agent = env.get("PI_CODING_AGENT_DIR", "").strip()
    root = (Path(agent).expanduser() if agent else home / ".pi" / "agent") / "sessions"
    if root not in roots:
        roots.append(root)
    return roots


def locations() -> list[Location]:
    """pi's session folders (see the module docstring)."""
    return [Location(HARNESS, p) for p in session_roots(os.environ, Path.home())]


def detect(path: Path, head: bytes, hint: str | None) -> Source | None:
    """Claim ``path`` for pi when it is a session of the shared format that pi wrote."""
    return claim(HARNESS, path, head, hint)
