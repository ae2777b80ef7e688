"""What a watcher watches: the named paths, or every installed plugin's default locations."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import attrs

from rematch_trace.host.facade import Host
from rematch_trace.importing.discovery import default_roots


@attrs.frozen
class Root:
    """A watched file or folder, and the harness its location hints at (``None`` for a named path)."""

    path: Path
    hint: str | None


@attrs.frozen
class Roots:
    """The watched roots, in the order that decides a file's hint (the first root holding it)."""

    roots: tuple[Root, ...]
    #: The paths the user named (empty: the default locations), as :func:`discover` takes them.
    named: tuple[Path, ...]

    @classmethod
    def of(cls, host: Host, paths: list[Path]) -> Roots:
        """The roots of ``paths``, or of every plugin's default locations when there are none."""
        pairs: list[tuple[Path, str | None]]
        if paths:
            pairs = [(Path(os.path.abspath(p)), None) for p in paths]
        else:
            pairs = [(Path(os.path.abspath(path)), hint) for path, hint in default_roots(host)]
        seen: set[Path] = set()
        roots = []
        for path, hint in pairs:
            if path not in seen:
                seen.add(path)
                roots.append(Root(path, hint))
        return cls(tuple(roots), tuple(paths))

    def state(self) -> tuple[tuple[Path, int], ...]:
        """The roots that exist now (a harness makes its folder on first use), a file's with its inode.

        A watch on a file follows its inode: a file named on the command line
        and then replaced (renamed over) needs a new watch, as does a root that
        appears or goes.
        """
        out = []
        for r in self.roots:
            try:
                st = r.path.stat()
            except OSError:
                continue
            out.append((r.path, 0 if stat.S_ISDIR(st.st_mode) else st.st_ino))
        return tuple(out)

    def hint_of(self, path: str) -> str | None:
        """The hint :func:`~rematch_trace.importing.discovery.discover` gives ``path``: its first root's."""
        for r in self.roots:
            root = str(r.path)
            if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
                return r.hint
        return None

    def prefixes(self) -> list[str]:
        """Every root as a path string (for counting the sources under them)."""
        return [str(r.path) for r in self.roots]
