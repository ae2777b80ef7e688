"""``rematch audit``: the risky actions of one session or of all, most severe first.

It reads the security event files (``events/*.jsonl``) a data folder holds; a
row is one ``pre_tool_use`` event with risk features, joined with its
outcome: the post event of the same call, or ``blocked`` (with the rule)
when rematch's verdict denied it (its ``tool_blocked`` event).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from rematch_trace.security.risk import severity, sort_features
from rematch_trace.store.datafolder import safe_name

#: Outcomes of an audited action.
OUTCOMES = ("ok", "failed", "blocked", "unknown")


def _events(path: Path) -> Iterator[dict[str, Any]]:
    """The events of a file, streamed (an unreadable file yields none; a bad line is skipped)."""
    try:
        with open(path, "rb") as f:
            for line in f:
                try:
                    ev = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(ev, dict):
                    yield ev
    except OSError:
        return


def actions(path: Path) -> list[dict[str, Any]]:
    """Every ``pre_tool_use`` event of one events file as a row (risky or not), joined with its outcome,
    in file order. A call with no post event has the outcome ``unknown``: it never got a result.

    Two passes over the file (outcomes, then rows), so the events are never all held at once."""
    outcome: dict[str, str] = {}
    rule: dict[str, str] = {}
    for ev in _events(path):
        call_id = ev.get("source_tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            continue
        kind = ev.get("kind")
        if kind == "tool_blocked":
            # Blocked stays the outcome whatever the harness reports of the call afterwards.
            outcome[call_id] = "blocked"
            meta = ev.get("metadata")
            found = (meta.get("rule") or meta.get("blocked_by")) if isinstance(meta, dict) else None
            if isinstance(found, str) and found:
                rule[call_id] = found
        elif kind in ("post_tool_use", "post_tool_failure") and outcome.get(call_id) != "blocked":
            outcome[call_id] = "ok" if kind == "post_tool_use" else "failed"
    rows: list[dict[str, Any]] = []
    for ev in _events(path):
        # A post event repeats its call's features: the pre event is the row.
        if ev.get("kind") != "pre_tool_use":
            continue
        features = ev.get("risk_features")
        call = ev.get("source_tool_call_id")
        feats = sort_features(f for f in features if isinstance(f, str)) if isinstance(features, list) else []
        meta = ev.get("metadata") if isinstance(ev.get("metadata"), dict) else {}
        rows.append(
            {
                "severity": severity(feats),
                "risk_features": feats,
                "occurred_at": ev.get("occurred_at"),
                "agent": ev.get("agent"),
                "session": ev.get("source_session_id"),
                "agent_sub_id": ev.get("agent_sub_id"),
                "call_id": call if isinstance(call, str) else None,
                "tool_name": ev.get("tool_name"),
                "action_type": ev.get("action_type"),
                "args_summary": ev.get("args_summary") or "",
                "outcome": outcome.get(call, "unknown") if isinstance(call, str) else "unknown",
                "error_class": (meta or {}).get("error_class"),
                "rule": rule.get(call) if isinstance(call, str) else None,
                "event_id": ev.get("event_id"),
                "action_fingerprint": ev.get("action_fingerprint"),
                "events_file": path.name,
            }
        )
    return rows


def _rows(path: Path) -> list[dict[str, Any]]:
    return [r for r in actions(path) if r["risk_features"]]


def most_severe_first(rows: list[dict[str, Any]]) -> None:
    """Sort audit rows in place: most severe first, then more features, then time and event id (stable)."""
    rows.sort(key=lambda r: (-r["severity"], -len(r["risk_features"]), str(r["occurred_at"]), str(r["event_id"])))


def _matches(session: str, path: Path, row: dict[str, Any]) -> bool:
    """The row belongs to ``session``: its file, its session or subagent id, or an id prefix of them."""
    if path.stem.startswith(safe_name(session)):
        return True
    return any(isinstance(v, str) and v.startswith(session) for v in (row["session"], row["agent_sub_id"]))


def audit(data_dir: Path, session: str | None = None) -> list[dict[str, Any]]:
    """The risky actions of ``session`` (an id or id prefix) or of every session, most severe first.

    Ties are broken by time, then event id, so the order is stable.
    """
    folder = Path(data_dir) / "events"
    if session is not None:
        paths = [folder / f"{safe_name(session)}.jsonl"]
        paths = [p for p in paths if p.exists()]
        if not paths:
            # A subagent's events name their parent in source_session_id: find those too.
            paths = sorted(folder.glob("*.jsonl"))
    else:
        paths = sorted(folder.glob("*.jsonl"))
    rows: list[dict[str, Any]] = []
    for p in paths:
        for row in _rows(p):
            if session is None or _matches(session, p, row):
                rows.append(row)
    most_severe_first(rows)
    return rows


def format_audit(rows: list[dict[str, Any]]) -> str:
    """The rows as a terminal table under a header: severity, time, session, tool, outcome, features, summary."""
    if not rows:
        return "no risky actions found"
    from rematch_trace.host.text import one_line

    lines = [f"{'sev':>3}  {'time (UTC)':19}  {'session':21}  {'tool':14}  {'outcome':10}  risk features\n"
             f"     what it did"]
    for r in rows:
        # Every field came from a session (the agent's): hidden characters escaped, one line each.
        who = one_line(str(r.get("session") or "")[:12])
        if r.get("agent_sub_id"):
            who += f"/{one_line(str(r['agent_sub_id'])[:8])}"
        detail = r.get("rule") if r["outcome"] == "blocked" else r.get("error_class")
        outcome = one_line(r["outcome"] + (f"({detail})" if detail else ""))
        summary = one_line(str(r.get("args_summary") or "").replace("\n", " "))
        lines.append(
            f"{r.get('severity', 0)!s:>3}  {one_line(str(r.get('occurred_at') or '')[:19]):19}  {who:21}  "
            f"{one_line(r.get('tool_name') or '')!s:14.14}  {outcome:10}  {one_line(','.join(r['risk_features']))}\n     {summary[:160]}"
        )
    return "\n".join(lines) + f"\n{len(rows)} risky action(s)"


__all__ = ["OUTCOMES", "actions", "audit", "format_audit", "most_severe_first"]
