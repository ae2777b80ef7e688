"""The security-event sink's saved state, typed (no original input: names, digests and counts)."""

from __future__ import annotations

from typing import Any

import attrs


@attrs.define(slots=True)
class SinkState:
    """What :class:`~rematch_trace.security.events.EventSink` needs to go on where it stopped."""

    #: Events written so far (the next event id's number).
    n: int = 0
    #: The time of the last record seen (unix ms).
    t: int | None = None
    #: Whether ``session_start`` was written.
    started: bool = False
    #: Tool calls waiting for their results: call id -> name, action, fingerprints, turn.
    calls: dict[str, list[Any]] = attrs.field(factory=dict)
    #: Calls blocked (live), kept for a result that may still follow: call id -> what ``calls`` held.
    blocked_calls: dict[str, list[Any]] = attrs.field(factory=dict)
    #: How many calls ended blocked (``tool_blocked`` events).
    blocked: int = 0
    #: The harness's turn id the records belong to, and the permission mode in force.
    turn: str | None = None
    mode: str | None = None


__all__ = ["SinkState"]
