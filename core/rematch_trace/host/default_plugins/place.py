"""The built-in ``identify_place``: the repository on disk, without a git process."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rematch_trace.host.hookspecs import hookimpl

if TYPE_CHECKING:
    from rematch_trace.place.identity import Place


@hookimpl(trylast=True)
def identify_place(cwd: str) -> Place | None:
    """Walk up from ``cwd`` to ``.git`` and read the origin, HEAD and refs."""
    from rematch_trace.place.identity import identify  # when a place is asked: not on every start

    return identify(cwd)
