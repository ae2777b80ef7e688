"""A process's plugin host, and the claim a continued file was imported under: what the import's worker and
the index's reading of sources (importing/search_sources.py) both need, below them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rematch_trace.host.facade import HEAD_BYTES, Host
from rematch_trace.host.source import Source

if TYPE_CHECKING:
    from rematch_trace.store.states import SavedState

_host: Host | None = None


def worker_host() -> Host:
    """This process's plugin host (plugins loaded on first use; forked workers inherit it)."""
    global _host
    if _host is None:
        from rematch_trace.host.loading import load_plugins, pm

        load_plugins()
        _host = Host(pm)
    return _host


def use_host(host: Host | None) -> None:
    """Make ``host`` this process's plugin host (``None``: the installed plugins, on next use)."""
    global _host
    _host = host


def kept_source(host: Host, saved: SavedState, path: Path, hint: str | None, offset: int) -> Source | None:
    """The source a continued file was claimed as, without asking the plugins again, or ``None``.

    Only while nothing detection looked at has changed: the file is found with
    the same hint, its plugin is still loaded, it is not compressed (a plugin
    may look at a compressed file's neighbours), and the head detection read
    lies in the part already imported, whose fingerprints were just checked
    (less the prefix the harness itself said it rewrites in place).
    """
    d = saved.detected
    if (d is None or d.hint != hint or d.compression or saved.harness is None or offset < HEAD_BYTES
            or saved.rewritten or host.pm.get_plugin(d.plugin) is None):
        return None
    return Source(saved.harness, path, agent_kind="sub" if d.agent_kind == "sub" else "main",
                  parent=Path(d.parent) if d.parent is not None else None, mutable_prefix=saved.head_skip,
                  plugin=d.plugin)
