"""Finding transcript files: the named paths, or every plugin's default locations."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import attrs

from rematch_trace.host.facade import Host
from rematch_trace.host.fs import SUFFIXES, is_url, walk_url


def walk(root: str | Path, suffixes: tuple[str, ...] = SUFFIXES,
         names: tuple[str, ...] | Callable[[], tuple[str, ...]] = ()) -> Iterator[str]:
    """Transcript-like files under ``root`` (names ending with one of ``suffixes``, or matching one of
    ``names``), in sorted order, never following links into loops.

    ``names``: file-name patterns of other sources (the plugins' ``Location.names``), matched
    too; a function giving them is called at the first file that is not a JSONL one (asking the
    plugins loads their locating modules: a folder of JSONL files alone never pays for it).
    Paths are plain strings: an archive of 100,000 files held as ``Path``
    objects would cost about 40 MB more.
    """
    import fnmatch

    patterns: tuple[str, ...] | None = names if isinstance(names, tuple) else None

    def other(name: str) -> bool:
        nonlocal patterns
        if patterns is None:
            patterns = names() if callable(names) else ()
        return any(fnmatch.fnmatchcase(name, n) for n in patterns)

    seen: set[tuple[int, int]] = set()
    stack = [os.fspath(root)]
    while stack:
        d = stack.pop()
        try:
            st = os.stat(d)
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
                    subdirs.append(e.path)
                elif e.is_file(follow_symlinks=False) and (e.name.endswith(suffixes) or other(e.name)):
                    yield e.path
            except OSError:
                continue
        stack.extend(reversed(subdirs))


def claimable(host: Host, path: str, hint: str | None) -> bool:
    """Whether ``path`` goes to the import: a file of the core's own endings always (an unclaimed
    one is reported), one of an ending a plugin named only when a plugin claims it (a ``.json``
    file is seldom a transcript: the others are passed over in silence)."""
    if path.endswith(SUFFIXES) or is_url(path):
        return True
    try:
        return host.detect(Path(path), hint) is not None
    except Exception:  # a plugin that fails here is reported when the file is imported
        return True


@attrs.define
class Searched:
    """A folder an import looked in: a named one, or a plugin's default location."""

    path: str
    #: The plugin whose default location it is (``None`` for a named folder).
    harness: str | None
    exists: bool
    #: How many transcript-like files it held.
    found: int = 0


def default_roots(host: Host) -> list[tuple[Path, str | None]]:
    """Every plugin's default transcript folder, each once, with the harness it hints at.

    A folder two harnesses name (pi and omp read the same environment variables) holds files of
    either: it hints at none, so every plugin is asked about its files, as for a folder the user
    named (docs/trace-schema.md, Decisions).
    """
    owners: dict[Path, set[str]] = {}
    for loc in host.locations():
        owners.setdefault(loc.path, set()).add(loc.harness)
    return [(path, next(iter(named)) if len(named) == 1 else None) for path, named in owners.items()]


def discover(
    host: Host, paths: Sequence[Path | str], searched: list[Searched] | None = None
) -> list[tuple[str, str | None]]:
    """The candidate files (absolute paths, each once), each with the harness its location hints at.

    A URL (``s3://...``, see :mod:`rematch_trace.host.fs`) is listed on its
    file system, and its files are given as URLs. ``searched``, when given, gets
    one entry per folder looked in (named or default).
    """
    found: list[tuple[str, str | None]] = []
    seen: set[str] = set()
    suffixes = host.suffixes()
    names = host.source_names  # asked only when a walk meets a file that is not a JSONL one

    def add(root: str | Path, hint: str | None) -> None:
        before = len(found)
        # Under an absolute, normalised root every path scandir gives is one too.
        for f in walk(os.path.abspath(root), suffixes, names):
            if f not in seen and claimable(host, f, hint):
                seen.add(f)
                found.append((f, hint))
        if searched is not None:
            searched.append(Searched(str(root), hint, True, len(found) - before))

    if paths:
        for p in paths:
            if isinstance(p, str) and is_url(p):
                for u in walk_url(p, suffixes):
                    if u not in seen:
                        seen.add(u)
                        found.append((u, None))
                continue
            p = Path(p)
            if p.is_dir():
                add(p, None)
            else:
                key = os.path.abspath(p)
                if key not in seen:
                    seen.add(key)
                    found.append((key, None))
    else:
        for root, hint in default_roots(host):
            if root.is_dir():
                add(root, hint)
            elif searched is not None:
                searched.append(Searched(str(root), hint, False))
    return found
