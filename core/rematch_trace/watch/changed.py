"""A burst of file system changes, as the transcript files to import (one entry per file).

watchfiles reports every write; the watcher imports each file once per burst,
so a burst of appends costs one continuation. A new folder is walked, because
files written into it before its watch was added raise no event of their own.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rematch_trace.host.fs import SUFFIXES
from rematch_trace.importing.discovery import walk
from rematch_trace.watch.roots import Roots

if TYPE_CHECKING:
    from rematch_trace.host.facade import Host


def under(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or inside it."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def files_of(
    changes: Iterable[tuple[int, str]], roots: Roots, data_root: str, deleted: int, host: Host | None = None,
    suffixes: tuple[str, ...] = SUFFIXES,
) -> list[tuple[str, str | None]]:
    """The transcript files a burst touched (sorted, each once), with their hints.

    ``suffixes``: the endings transcripts have (the plugins' ``transcript_suffixes`` with the core's).

    ``deleted`` is watchfiles' code for a removal: a removed file is left as
    the batch import leaves it (its traces stay, its ledger row too). With
    ``host``, a file matching a plugin's ``Location.names`` is a source too, and
    any other changed file is asked ``member_source`` (a database's log, one
    file of a session tree): the source it belongs to is imported.
    """
    import fnmatch

    names = host.source_names() if host is not None else ()
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
            base = os.path.basename(path)
            if path.endswith(suffixes) or any(fnmatch.fnmatchcase(base, n) for n in names):
                paths.add(path)
            elif host is not None:
                owner = host.member_source(Path(path))
                if owner is not None and not under(os.path.abspath(owner), data_root):
                    paths.add(os.path.abspath(owner))
        elif stat.S_ISDIR(st.st_mode):
            paths.update(f for f in walk(path, suffixes, names) if not under(f, data_root))
    return [(p, roots.hint_of(p)) for p in sorted(paths)]


def wanted(data_root: str, suffixes: tuple[str, ...] = SUFFIXES, any_file: bool = False) -> Callable[[Any, str], bool]:
    """The watchfiles filter: transcript files and folders, nothing in the data folder.

    ``suffixes``: the endings transcripts have (the plugins' ``transcript_suffixes`` with the core's);
    ``any_file``: every file (a plugin names sources or members that are not JSONL files).
    """

    def keep(change: Any, path: str) -> bool:
        if under(path, data_root):
            return False
        if any_file:
            return True
        # A new folder may hold files written before its watch was added (see files_of).
        return path.endswith(suffixes) or os.path.isdir(path)

    return keep
