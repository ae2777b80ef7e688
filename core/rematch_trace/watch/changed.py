"""A burst of file system changes, as the transcript files to import (one entry per file).

watchfiles reports every write; the watcher imports each file once per burst,
so a burst of appends costs one continuation. A new folder is walked, because
files written into it before its watch was added raise no event of their own.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from typing import Any

from rematch_trace.importing.discovery import SUFFIXES, walk
from rematch_trace.watch.roots import Roots


def under(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or inside it."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def files_of(
    changes: Iterable[tuple[int, str]], roots: Roots, data_root: str, deleted: int,
    suffixes: tuple[str, ...] = SUFFIXES,
) -> list[tuple[str, str | None]]:
    """The transcript files a burst touched (sorted, each once), with their hints.

    ``suffixes``: the endings transcripts have (the plugins' ``transcript_suffixes`` with the core's).

    ``deleted`` is watchfiles' code for a removal: a removed file is left as
    the batch import leaves it (its traces stay, its ledger row too).
    """
    paths: set[str] = set()
    for change, raw in changes:
        path = os.path.abspath(raw)
        if change == deleted or under(path, data_root):
            # The data folder may lie under a watched root: its own writes are no news.
            continue
        try:
            st = os.lstat(path)
        except OSError:
            continue  # gone already (a temporary file renamed away)
        if stat.S_ISREG(st.st_mode):
            if path.endswith(suffixes):
                paths.add(path)
        elif stat.S_ISDIR(st.st_mode):
            paths.update(f for f in walk(path, suffixes) if not under(f, data_root))
    return [(p, roots.hint_of(p)) for p in sorted(paths)]


def wanted(data_root: str, suffixes: tuple[str, ...] = SUFFIXES) -> Callable[[Any, str], bool]:
    """The watchfiles filter: transcript files and folders, nothing in the data folder."""

    def keep(change: Any, path: str) -> bool:
        if under(path, data_root):
            return False
        # A new folder may hold files written before its watch was added (see files_of).
        return path.endswith(suffixes) or os.path.isdir(path)

    return keep
