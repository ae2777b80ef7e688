"""What must agree between a live trace and the import of the same session's transcript.

Each projection keeps the fields the issue names (inputs, tool results, turns, models, usage,
flags, the event streams' fingerprints) and nothing that differs by design: the live-only fields
(``input.source``, ``mark``, ``tool_blocked``, ``head_sha``, ``files_changed``), times and
``seq``. A test compares them one by one so a failure names what disagrees.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every line of a JSONL file (none when the file is absent)."""
    if not path.exists():
        return []
    return [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]


def read_jsonl_bytes(data: bytes) -> list[dict[str, Any]]:
    """Every line of JSONL bytes."""
    return [orjson.loads(x) for x in data.splitlines() if x.strip()]


def _runs(trace: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The records of each run (an ``agent_end`` closes one)."""
    runs: list[list[dict[str, Any]]] = [[]]
    for r in trace:
        runs[-1].append(r)
        if r["ev"] == "agent_end":
            runs.append([])
    return [run for run in runs if any(r["ev"] in ("input", "turn_end", "tool_result") for r in run)]


def inputs(trace: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Each input's text, prelabel and the skills it invoked."""
    return [(r["text"], r["prelabel"], r["skills_invoked"]) for r in trace if r["ev"] == "input"]


def sources(trace: list[dict[str, Any]]) -> list[str]:
    """Each input's source (``prompt`` live; the import cannot tell and writes ``""``)."""
    return [r["source"] for r in trace if r["ev"] == "input"]


def results(trace: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Each tool result's tool, call id, args_hash, error flag and class, in call-id order."""
    return sorted((r["tool"], r["call_id"], r["args_hash"], r["is_error"], r["error_class"])
                  for r in trace if r["ev"] == "tool_result")


def turns(trace: list[dict[str, Any]]) -> list[int]:
    """How many ``turn_end`` records each run has."""
    return [sum(r["ev"] == "turn_end" for r in run) for run in _runs(trace)]


def agent_end_turns(trace: list[dict[str, Any]]) -> list[Any]:
    """What each ``agent_end`` says the run's turns were."""
    return [r["turns"] for r in trace if r["ev"] == "agent_end"]


def models(trace: list[dict[str, Any]]) -> list[Any]:
    """Each turn's model (``session_start.model`` differs by design: live writes it at the start,
    from the ``SessionStart`` payload, which names none in Claude Code 2.1.328's print mode)."""
    return [r["model"] for r in trace if r["ev"] == "turn_end"]


def usage(trace: list[dict[str, Any]]) -> list[dict[str, int]]:
    """Each run's summed ``turn_end`` usage (the live path may write fewer, larger turn_ends)."""
    out = []
    for run in _runs(trace):
        total: dict[str, int] = {}
        for r in run:
            if r["ev"] == "turn_end":
                for k, v in r["usage"].items():
                    if isinstance(v, int):
                        total[k] = total.get(k, 0) + v
        out.append(total)
    return out


def flags(trace: list[dict[str, Any]]) -> Any:
    """The flag reasons the session ends with."""
    ends = [r for r in trace if r["ev"] == "session_shutdown"]
    return ends[-1]["reasons"] if ends else None


def lifetimes(trace: list[dict[str, Any]]) -> int:
    """How many ``session_shutdown`` records: one per process lifetime of a resumed Claude Code
    session (live at each ``SessionEnd``, on import at each ``cost-state`` line), else one."""
    return sum(r["ev"] == "session_shutdown" for r in trace)


def fingerprints(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Each security event's kind, call, fingerprint and turn, sorted."""
    return sorted((e["kind"], e.get("source_tool_call_id") or "", e.get("action_fingerprint") or "",
                   e.get("source_turn_id") or "") for e in events)


def verdicts_apart(live: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``live``'s fingerprints without its ``tool_verdict`` events (a hold and its approval: only the live
    service knows them, docs/security-events.md), after checking each is tied to a call of the stream with
    that call's own fingerprint (its ``pre_tool_use``)."""
    verdicts = [e for e in live if e[0] == "tool_verdict"]
    calls = {(e[1], e[2]) for e in live if e[0] == "pre_tool_use"}
    for v in verdicts:
        assert (v[1], v[2]) in calls, v
    return [e for e in live if e[0] != "tool_verdict"]


#: The projections a rig test compares, by name.
PROJECTIONS = {"inputs": inputs, "results": results, "turns": turns, "agent_end_turns": agent_end_turns,
               "models": models, "usage": usage, "flags": flags, "lifetimes": lifetimes}


def disagreements(live: list[dict[str, Any]], imported: list[dict[str, Any]],
                  names: list[str] | None = None) -> dict[str, tuple[Any, Any]]:
    """The projections (all, or ``names``) on which live and import differ: name -> (live, import)."""
    out = {}
    for name, fn in PROJECTIONS.items():
        if names is not None and name not in names:
            continue
        a, b = fn(live), fn(imported)
        if a != b:
            out[name] = (a, b)
    return out
