"""Finding a session in a data folder by its id or an id prefix: one rule for every command.

A subagent's id is its parent's id, a dot, and a suffix (``<id>.agent-a7be2f0``,
``<id>.sidechain-1``), so a prefix of a session's id is also a prefix of its
subagents'. The rule: an exact id wins; else, among the sessions whose id
starts with the prefix, the one whose id every other one extends with a dot
(the session over its own subagents); else the prefix is ambiguous.
"""

from __future__ import annotations

import attrs

from rematch_trace.store.datafolder import DataDir, safe_name

#: How many candidates an ambiguous prefix names before "and N more".
SHOWN = 5


@attrs.frozen
class Lookup:
    """What a prefix matched: the one session chosen, or every candidate (sorted) when none is."""

    prefix: str
    chosen: str | None
    candidates: tuple[str, ...]

    def listing(self, shown: int = SHOWN) -> str:
        """The candidates as a comma-separated list, cut after ``shown`` with "and N more"."""
        head = ", ".join(self.candidates[:shown])
        rest = len(self.candidates) - shown
        return head + (f" and {rest} more" if rest > 0 else "")


def lookup(data: DataDir, prefix: str) -> Lookup:
    """The session of ``data`` that ``prefix`` names, by the module's rule (trace file names are the ids)."""
    name = safe_name(prefix)
    if data.trace_path(prefix).exists():
        return Lookup(prefix, name, (name,))
    try:
        stems = sorted(p.name[: -len(".jsonl")] for p in data.traces.glob("*.jsonl") if p.name.startswith(name))
    except OSError:
        stems = []
    if len(stems) == 1:
        return Lookup(prefix, stems[0], tuple(stems))
    # Sorted, a session comes before its subagents ("<id>" < "<id>.agent-…").
    if stems and all(s == stems[0] or s.startswith(stems[0] + ".") for s in stems):
        return Lookup(prefix, stems[0], tuple(stems))
    return Lookup(prefix, None, tuple(stems))


__all__ = ["SHOWN", "Lookup", "lookup"]
