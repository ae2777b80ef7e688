"""The harness's own state folders: files a coding agent writes as part of how its harness works.

Claude Code keeps its auto memory (``projects/<project>/memory/``, e.g.
``MEMORY.md``), its plan files (``plans/``) and its todo lists (``todos/``)
under its config folder (``$CLAUDE_CONFIG_DIR``, else ``~/.claude``), and the
agent writes them with its ordinary Write and Edit tools, outside any
repository. The built-in policy's ``harness-state`` rule lets those writes
through (``no_override``) before ``write-outside-repository`` denies writes
outside the repository; the policy condition ``harness_state_paths: true``
holds when every path a call names lies in one of them.

Only these folders, only for the harness that owns them (the request's
adapter). Not the config folder's other files: ``settings.json``, hooks,
commands, agents and skills change what the agent may do, and stay denied.
Codex and omp/pi have none here: their memories are written by the harness
itself, not through a tool call a hook sees, and no session of the corpus
shows their agents writing a state file with a file tool.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

#: Adapter -> (the environment variable naming its config folder, its default under ``~``,
#: the folders under it that are the harness's own state; ``*`` is one path segment).
STATE_FOLDERS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "claude_code": ("CLAUDE_CONFIG_DIR", ".claude", ("projects/*/memory", "plans", "todos")),
}


def state_roots(adapter: str, env: Mapping[str, str] | None = None) -> tuple[tuple[str, ...], ...]:
    """The state folders of ``adapter``, each as absolute path segments (``*``: any one segment)."""
    spec = STATE_FOLDERS.get(adapter)
    if spec is None:
        return ()
    env = os.environ if env is None else env
    var, default, folders = spec
    configured = (env.get(var) or "").strip()
    home = env.get("HOME") or os.path.expanduser("~")
    base = os.path.normpath(os.path.expanduser(configured) if configured else os.path.join(home, default))
    if not os.path.isabs(base):
        return ()
    parts = tuple(p for p in base.split("/") if p)
    return tuple(parts + tuple(f.split("/")) for f in folders)


def in_state_folder(path: str, roots: tuple[tuple[str, ...], ...]) -> bool:
    """Whether normalized absolute ``path`` lies strictly inside one of ``roots``."""
    segs = [p for p in path.split("/") if p]
    for root in roots:
        if len(segs) > len(root) and all(r == "*" or r == s for r, s in zip(root, segs, strict=False)):
            # (a "*" never matches "..": paths are normalized before they get here)
            return True
    return False


__all__ = ["STATE_FOLDERS", "in_state_folder", "state_roots"]
