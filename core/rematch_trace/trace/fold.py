"""Reading a trace back into one session record."""

from __future__ import annotations

from os import PathLike
from typing import Any

import attrs
import orjson

from rematch_trace.place.identity import normalize_remote
from rematch_trace.trace.flags import FlagTracker
from rematch_trace.trace.records import LoadedEntry


@attrs.frozen
class FoldedSession:
    """What a trace says of its session, folded into one record."""

    session_id: str
    agent: dict[str, Any]
    cwd: str
    repo: str | None
    repo_remote: str | None
    subpath: str
    model: dict[str, Any] | None
    loaded_entries: list[LoadedEntry]
    visible_entries: list[str]
    inputs: int
    tool_results: int
    tool_errors: int
    turns: int
    model_changes: int
    interrupts: int
    prelabels: dict[str, int]
    skills_invoked: list[str]
    tokens: int
    reasons: list[str]
    flagged: bool
    seqs: dict[str, list[int]]


def _entry(value: Any) -> LoadedEntry | None:
    if isinstance(value, str):
        return LoadedEntry(id=value)  # the plain [id…] form of older traces
    if isinstance(value, dict) and isinstance(value.get("id"), str):
        return LoadedEntry(id=value["id"], version=value.get("version"), sha=value.get("sha"))
    return None


def fold_trace(path: str | PathLike[str]) -> FoldedSession:
    """Fold a trace file into a :class:`FoldedSession`.

    Loaded entries include those that retrieval records added (their
    ``entry_ids`` and every ``units[].entry_id``); the remote is normalized.
    Flag reasons are recomputed from the records, not copied.
    """
    start: dict[str, Any] = {}
    loaded: dict[str, LoadedEntry] = {}
    counts = {"input": 0, "tool_result": 0, "turn_end": 0, "model_change": 0}
    errors = interrupts = tokens = 0
    prelabels: dict[str, int] = {}
    skills: list[str] = []
    tracker = FlagTracker()
    with open(path, "rb") as f:
        for line in f:
            if not line.strip():
                continue
            r = orjson.loads(line)
            ev = r.get("ev")
            tracker.observe(r)
            if ev in counts:
                counts[ev] += 1
            if ev == "session_start":
                start = r
                for v in r.get("loaded_entries") or []:
                    e = _entry(v)
                    if e is not None:
                        loaded.setdefault(e.id, e)
            elif ev == "input":
                label = r.get("prelabel", "none")
                prelabels[label] = prelabels.get(label, 0) + 1
                interrupts += label == "interrupt"
                for s in r.get("skills_invoked") or []:
                    if s not in skills:
                        skills.append(s)
            elif ev == "tool_result":
                errors += bool(r.get("is_error"))
            elif ev == "turn_end":
                tokens += int((r.get("usage") or {}).get("totalTokens") or 0)
            elif ev == "retrieval":
                ids = list(r.get("entry_ids") or [])
                ids += [u.get("entry_id") for u in r.get("units") or [] if isinstance(u, dict)]
                for i in ids:
                    if isinstance(i, str):
                        loaded.setdefault(i, LoadedEntry(id=i))
                for v in r.get("loaded_entries") or []:
                    e = _entry(v)
                    if e is not None and (loaded.get(e.id) in (None, LoadedEntry(id=e.id))):
                        loaded[e.id] = e  # a late load's version and sha
    reasons = tracker.reasons()
    return FoldedSession(
        session_id=start.get("session_id", ""),
        agent=start.get("agent") or {},
        cwd=start.get("cwd", ""),
        repo=start.get("repo"),
        repo_remote=normalize_remote(start.get("repo_remote")),
        subpath=start.get("subpath", ""),
        model=start.get("model"),
        loaded_entries=list(loaded.values()),
        visible_entries=list(start.get("visible_entries") or []),
        inputs=counts["input"],
        tool_results=counts["tool_result"],
        tool_errors=errors,
        turns=counts["turn_end"],
        model_changes=counts["model_change"],
        interrupts=interrupts,
        prelabels=prelabels,
        skills_invoked=skills,
        tokens=tokens,
        reasons=reasons,
        flagged=bool(reasons),
        seqs=tracker.seqs(),
    )
