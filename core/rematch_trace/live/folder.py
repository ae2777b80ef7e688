"""The live part of a data folder: per-session state and locks, and the error log.

``live/`` holds, for each session being captured, ``<id>.json`` (what the
writer needs to continue: the synthesizer's and event sink's states, the
records held for the current turn, the committed lengths of the outputs;
never a hook payload) and ``<id>.lock`` (one writer per session), plus
``errors.log``, where the hook logs what went wrong instead of telling the
harness. Light on imports: the hook entry point and every import use it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from rematch_trace.store.datafolder import DataDir, safe_name

#: The error log is rotated (to ``errors.log.1``) past this size.
ERROR_LOG_BYTES = 1 << 20
#: The longest message logged.
ERROR_MESSAGE_CHARS = 300


def live_dir(root: Path) -> Path:
    """``<data folder>/live``."""
    return root / "live"


def ensure_live_dir(root: Path) -> Path:
    """Create ``live/`` (and the data folder) private to the user; return it."""
    d = live_dir(root)
    if not d.is_dir():
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
    if d.is_symlink():
        raise OSError(f"{d} is a symbolic link; refusing to write through it")
    return d


def state_path(data: DataDir, session_id: str) -> Path:
    """``live/<id>.json``: a session's live state (its presence means the session is captured live)."""
    return live_dir(data.root) / f"{safe_name(session_id)}.json"


def lock_path(data: DataDir, session_id: str) -> Path:
    """``live/<id>.lock``: held by the one writer of the session."""
    return live_dir(data.root) / f"{safe_name(session_id)}.lock"


def is_live(data: DataDir, session_id: str) -> bool:
    """Whether ``session_id`` is (or was) captured live into ``data``: its trace is the live one."""
    # Asked for every session an import opens: the name made as text, not as a path object.
    return os.path.exists(os.path.join(data.root_text, "live", f"{safe_name(session_id)}.json"))


def log_error(root: Path, where: str, message: str) -> None:
    """Append one line to ``live/errors.log`` (never raises: the hook must exit 0).

    ``message`` must hold no hook input; it is cut to one line of
    :data:`ERROR_MESSAGE_CHARS` characters.
    """
    try:
        d = ensure_live_dir(root)
        path = d / "errors.log"
        try:
            if path.stat().st_size > ERROR_LOG_BYTES:
                os.replace(path, d / "errors.log.1")
        except FileNotFoundError:
            pass
        one_line = " ".join(str(message).split())[:ERROR_MESSAGE_CHARS]
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            os.write(fd, f"{stamp} {where}: {one_line}\n".encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except Exception:  # logging is best effort: failing here must not fail the hook
        pass
