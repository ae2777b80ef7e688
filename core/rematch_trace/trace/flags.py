"""Flag rules: which sessions are worth reflecting on, and the seqs behind each reason."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from rematch_trace.trace.reasons import REASONS as REASONS

#: Inputs with these prelabels are redirects.
REDIRECT_PRELABELS = frozenset({"interrupt", "revert", "negation", "reprompt"})
#: An error cluster: at least this many errors...
CLUSTER_ERRORS = 3
#: ...among this many consecutive tool_result records.
CLUSTER_WINDOW = 6


@attrs.define(slots=True)
class FlagTracker:
    """Follows a trace record by record and keeps each reason's seqs.

    Incremental, so a resumed import continues it: :meth:`to_state` and
    :meth:`from_state` round-trip it through JSON.
    """

    redirect: list[int] = attrs.field(factory=list)
    error_cluster: list[int] = attrs.field(factory=list)
    mark: list[int] = attrs.field(factory=list)
    window: list[list[Any]] = attrs.field(factory=list)  # [seq, is_error] of the last results

    def observe(self, record: Mapping[str, Any]) -> None:
        """Take one trace record (a dict with ``seq`` and ``ev``) into account."""
        ev = record.get("ev")
        seq = int(record.get("seq", 0))
        if ev == "input":
            label = str(record.get("prelabel", "none"))
            if label in REDIRECT_PRELABELS:
                self.redirect.append(seq)
            elif label.startswith("mark:"):
                self.mark.append(seq)
        elif ev == "mark":
            self.mark.append(seq)
        elif ev == "tool_result":
            is_error = bool(record.get("is_error"))
            window = self.window
            window.append([seq, is_error])
            if len(window) > CLUSTER_WINDOW:
                del window[0]
            if not is_error:
                # A result without error only narrows the window: its errors were a cluster's
                # (all kept already, among the last CLUSTER_WINDOW) before, or are too few now.
                return
            errors = [s for s, err in window if err]
            if len(errors) >= CLUSTER_ERRORS:
                for s in errors:
                    if s not in self.error_cluster[-CLUSTER_WINDOW:]:
                        self.error_cluster.append(s)

    def reasons(self) -> list[str]:
        """The flag reasons found so far, in the fixed order of :data:`REASONS`."""
        return [r for r in REASONS if getattr(self, r)]

    def seqs(self) -> dict[str, list[int]]:
        """Each present reason with the seqs behind it."""
        return {r: list(getattr(self, r)) for r in self.reasons()}

    def to_state(self) -> dict[str, Any]:
        """A JSON-serialisable snapshot (copies: the tracker goes on changing)."""
        # Spelled out: attrs.asdict walks every value generically, once per saved session.
        return {"redirect": list(self.redirect), "error_cluster": list(self.error_cluster),
                "mark": list(self.mark), "window": [list(w) for w in self.window]}

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> FlagTracker:
        """Restore a snapshot made by :meth:`to_state`."""
        return cls(**{k: list(v) for k, v in state.items()})


def flag_reasons(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """The flag reasons of a whole trace: ``redirect``, ``error_cluster``, ``mark``.

    ``redirect``: an input prelabelled interrupt, revert, negation or reprompt;
    ``error_cluster``: at least 3 ``is_error`` among any 6 consecutive
    tool_result records; ``mark``: a mark record or an input prelabelled
    ``mark:<class>``.
    """
    tracker = FlagTracker()
    for record in records:
        tracker.observe(record)
    return tracker.reasons()
