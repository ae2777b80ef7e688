"""Finding transcript files: the named paths, or every plugin's default locations."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from rematch_trace.host.facade import Host

#: File names a transcript may have (plain, zstd or gzip).
SUFFIXES = (".jsonl", ".jsonl.zst", ".jsonl.gz")


def walk(root: Path) -> Iterator[Path]:
    """Transcript-like files under ``root``, in sorted order, never following links into loops."""
    seen: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            st = d.stat()
        except OSError:
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen:
            continue
        seen.add(key)
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    subdirs.append(Path(e.path))
                elif e.is_file(follow_symlinks=False) and e.name.endswith(SUFFIXES):
                    yield Path(e.path)
            except OSError:
                continue
        stack.extend(reversed(subdirs))


def discover(host: Host, paths: list[Path]) -> list[tuple[Path, str | None]]:
    """The candidate files, each with the harness its location hints at (or ``None``)."""
    found: list[tuple[Path, str | None]] = []
    if paths:
        for p in paths:
            if p.is_dir():
                found.extend((f, None) for f in walk(p))
            else:
                found.append((p, None))
    else:
        for loc in host.locations():
            if loc.path.is_dir():
                found.extend((f, loc.harness) for f in walk(loc.path))
    seen: set[str] = set()
    unique = []
    for f, hint in found:
        key = os.path.abspath(f)
        if key not in seen:
            seen.add(key)
            unique.append((Path(key), hint))
    return unique
