"""Where a piece of the assistant's text stands in a trace: the seq of the turn it was written in.

The trace keeps each model turn as a ``turn_end`` record (its seq, its time, the first 2 KB of its text);
the source transcript gives the assistant's whole text, with its time but without a seq. A text belongs to
the turn that ends at or after it was written: the first ``turn_end`` whose time is not earlier than the
text's (the earliest seq among those of that time). A text written after the trace's last turn (a session
cut short) is placed at the last turn. The search index and the conversation view both place a text by this
rule, so a hit's seq is the seq its conversation entry carries.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable


class Turns:
    """A trace's ``turn_end`` records, as ``(time, seq)``, to place texts by their time."""

    __slots__ = ("_keys",)

    def __init__(self, turns: Iterable[tuple[int, int]]) -> None:
        self._keys = sorted(turns)

    def __bool__(self) -> bool:
        return bool(self._keys)

    def seq_at(self, t: int | None) -> int | None:
        """The seq of the turn a text written at ``t`` (ms) belongs to; ``None`` with no time or no turn."""
        if t is None or not self._keys:
            return None
        i = bisect.bisect_left(self._keys, (t, -1))
        if i == len(self._keys):
            return self._keys[-1][1]
        return self._keys[i][1]
