"""How a held call ended, as the service hands it to live capture (a module of its own below both).

The service (:mod:`rematch_trace.live.service`) makes it and live capture
(:mod:`rematch_trace.live.capture`) records it in the session's security stream; it lives here so that
neither has to import the other.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class Held:
    """How one held call ended: what the session's security stream records of the hold (no input)."""

    approval_id: str
    #: The verdict's reason that held it (``policy:<rule id>``).
    rule: str
    #: ``approved``, ``denied``, ``expired``, ``cancelled``.
    state: str
    #: Milliseconds from the hold to its end.
    held_ms: int
