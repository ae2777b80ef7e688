"""The built-in ``identify_place``: the repository on disk, without a git process."""

from __future__ import annotations

from ..hookspecs import hookimpl
from ..identity import Place, identify


@hookimpl(trylast=True)
def identify_place(cwd: str) -> Place | None:
    """Walk up from ``cwd`` to ``.git`` and read the origin, HEAD and refs."""
    return identify(cwd)
