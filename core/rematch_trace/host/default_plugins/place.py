"""The built-in ``identify_place``: the repository on disk, without a git process."""

from __future__ import annotations

from rematch_trace.host.hookspecs import hookimpl
from rematch_trace.place.identity import Place, identify


@hookimpl(trylast=True)
def identify_place(cwd: str) -> Place | None:
    """Walk up from ``cwd`` to ``.git`` and read the origin, HEAD and refs."""
    return identify(cwd)
