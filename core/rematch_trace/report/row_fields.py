"""What a reader of stored summaries needs without the summary code: their version, and a ledger row's fields.

``rematch sessions``, ``stats`` and ``flagged`` read the summaries the ledger stores; this module
(with no import of :mod:`rematch_trace.report.summary`, its attrs classes and its prices) tells
whether one is of this version, brings one of the version before up to date, and reads a row's
parent and flag seqs. :mod:`rematch_trace.report.summary` re-exports these names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rematch_trace.trace.reasons import REASONS

#: Bumped whenever what a summary holds changes: cached summaries of another version are recomputed.
SUMMARY_VERSION = 5
#: The version before ``parent`` was kept: such a summary is brought up to the next version without its
#: trace (:func:`upgrade`); version 5 added the quarter-hour ``slots``, which need the trace.
_NO_PARENT_VERSION = 3


def parent_of(row: Mapping[str, Any]) -> str | None:
    """The id of the session that started a ledger row's session, or ``None`` for a main session.

    The row's ``parent`` column (what the transcript named); for a ``sub`` row without one (a
    ledger read before its migration), a Claude Code id's part before its first dot (a subagent,
    sidechain or compaction run is ``<parent id>.<suffix>``). A parent equal to the session
    itself is no parent.
    """
    parent = row.get("parent")
    sid = row.get("session_id")
    if not (isinstance(parent, str) and parent) and row.get("agent_kind") == "sub" and row.get("harness") == "claude_code":
        parent = sid.split(".", 1)[0] if isinstance(sid, str) and "." in sid.lstrip(".") else None
    return parent if isinstance(parent, str) and parent and parent != sid else None


def upgrade(value: Any, row: Mapping[str, Any]) -> Any:
    """A stored summary of the version before ``parent`` brought to the next version from its ledger
    ``row`` (nothing else changed between them); any other value is returned as it is."""
    if isinstance(value, dict) and value.get("version") == _NO_PARENT_VERSION:
        value = dict(value, parent=parent_of(row), version=_NO_PARENT_VERSION + 1)
        # The fields in the order a summary of this version gives them (its JSON is compared whole).
        value["version"] = value.pop("version")
    return value


def reason_seqs(row: Mapping[str, Any]) -> dict[str, list[int]]:
    """Each flag reason of a ledger row with the seqs behind it (the ``seqs`` object; older rows' three columns).

    The three reasons of :data:`~rematch_trace.trace.reasons.REASONS` are always there, empty when absent.
    """
    seqs = row.get("seqs")
    if not isinstance(seqs, Mapping):
        seqs = {"redirect": row.get("redirect_seqs"), "error_cluster": row.get("error_cluster_seqs"),
                "mark": row.get("mark_seqs")}
    out: dict[str, list[int]] = {r: [] for r in REASONS}
    for reason, values in seqs.items():
        if isinstance(reason, str) and isinstance(values, list):
            out[reason] = [v for v in values if type(v) is int]
    return out
