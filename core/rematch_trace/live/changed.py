"""``session_shutdown.files_changed``: the files a session's successful writes named, hashed at its end."""

from __future__ import annotations

import hashlib
import os
import stat
import time

#: At most this many files are hashed...
MAX_FILES = 50
#: ...each at most this large.
MAX_FILE_BYTES = 1 << 20


def hash_changed_files(
    paths: list[str], repo: str | None, cwd: str, budget_s: float
) -> list[list[str]] | None:
    """``[[path, sha256], ...]`` of the first :data:`MAX_FILES` readable regular files.

    Relative paths are taken from ``cwd``; a path inside ``repo`` is written
    relative to it. Files larger than :data:`MAX_FILE_BYTES`, missing or
    unreadable are passed over. ``None`` when nothing changed or when hashing
    overran ``budget_s`` seconds (the seed: the field is then omitted).
    """
    if not paths:
        return None
    deadline = time.monotonic() + budget_s
    out: list[list[str]] = []
    seen: set[str] = set()
    for p in paths:
        if len(out) >= MAX_FILES:
            break
        if time.monotonic() > deadline:
            return None
        full = os.path.normpath(p if os.path.isabs(p) or not cwd else os.path.join(cwd, p))
        if full in seen:
            continue
        seen.add(full)
        digest = _hash(full)
        if digest is None:
            continue
        shown = full
        if repo:
            rel = os.path.relpath(full, repo)
            if not rel.startswith(".."):
                shown = rel.replace(os.sep, "/")
        out.append([shown, digest])
    if time.monotonic() > deadline:
        return None
    return out or None


def _hash(path: str) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
            return None
        h = hashlib.sha256()
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)
