"""A readable rendering of one trace for the terminal.

Each line: seq, UTC date and time, record kind, then what the record says.
Records behind a flag reason are marked with it (``! redirect``); tool calls
that never got a result (in the events file, absent from the trace) are shown
as such where they happened. Transcript text is shown with its control and
bidi characters escaped, so a transcript cannot drive the terminal.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from rematch_trace.report.summary import model_name, trace_records
from rematch_trace.report.text import clip
from rematch_trace.trace.flags import FlagTracker

#: Characters of a tool's arguments shown (enough for a command and the file names it touches).
ARGS_WIDTH = 160
TEXT_WIDTH = 120


def _when(t: Any) -> str:
    try:
        return dt.datetime.fromtimestamp(int(t) / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    except (TypeError, ValueError, OverflowError, OSError):
        return "----------  --:--:--"


def _args(value: Any) -> str:
    """A tool input on one line: a mapping as ``key=value`` pairs, the rest as compact JSON."""
    if isinstance(value, Mapping):
        parts = []
        for k, v in value.items():
            text = v if isinstance(v, str) else orjson.dumps(v, default=str).decode()
            parts.append(f"{k}={text}")
        return clip(" ".join(parts), ARGS_WIDTH)
    return clip(orjson.dumps(value, default=str).decode(), ARGS_WIDTH)


def _or(value: Any, missing: str = "-") -> str:
    return clip(value, TEXT_WIDTH) if value not in (None, "") else missing


def render_record(r: dict[str, Any], reasons: list[str] | None = None, seq_width: int = 5) -> str:
    """One line for one record; ``reasons`` are the flag reasons it stands behind."""
    ev = str(r.get("ev"))
    head = f"{r.get('seq', '?')!s:>{seq_width}} {'!' if reasons else ' '} {_when(r.get('t'))} {ev:<16}"
    line = _body(ev, head, r)
    return f"{line}   <- {', '.join(reasons)}" if reasons else line


def _body(ev: str, head: str, r: dict[str, Any]) -> str:
    if ev == "session_start":
        agent = r.get("agent") if isinstance(r.get("agent"), Mapping) else {}
        assert isinstance(agent, Mapping)
        extra = f" remote={clip(r['repo_remote'], 100)}" if r.get("repo_remote") else ""
        return (f"{head} {_or(agent.get('name'))}/{_or(agent.get('kind'))} {model_name(r.get('model')) or 'model unknown'} "
                f"cwd={_or(r.get('cwd'))}{extra} id={_or(r.get('session_id'))}")
    if ev == "input":
        label = r.get("prelabel")
        tag = "" if label in (None, "none") else f" <{clip(label, 40)}>"
        return f"{head}{tag} {clip(r.get('text'), TEXT_WIDTH)}"
    if ev == "tool_result":
        status = f"ERROR {_or(r.get('error_class'), 'unclassified')}" if r.get("is_error") else "ok"
        return f"{head} {_or(r.get('tool'))} {status} {r.get('result_bytes') or 0}B {_args(r.get('input'))}"
    if ev == "turn_end":
        u = r.get("usage") if isinstance(r.get("usage"), Mapping) else {}
        assert isinstance(u, Mapping)
        stop = f" {clip(r['stop_reason'], 30)}" if r.get("stop_reason") else ""
        return f"{head} {u.get('totalTokens') or 0} tok{stop} {clip(r.get('text_head'), 70)}".rstrip()
    if ev == "model_change":
        return f"{head} {model_name(r.get('from')) or '-'} -> {model_name(r.get('to')) or '-'}"
    if ev == "agent_end":
        return f"{head} turns={r.get('turns')}"
    if ev == "session_shutdown":
        return f"{head} flagged={'yes' if r.get('flagged') else 'no'} reasons={','.join(map(str, r.get('reasons') or [])) or '-'}"
    rest = {k: v for k, v in r.items() if k not in ("seq", "t", "ev")}
    return f"{head} {clip(orjson.dumps(rest, default=str).decode(), TEXT_WIDTH)}"


def _ms(iso: Any) -> int | None:
    try:
        return int(dt.datetime.fromisoformat(str(iso).replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def _unanswered_line(row: Mapping[str, Any], seq_width: int) -> str:
    when = _when(_ms(row.get("occurred_at")))
    return (f"{'-':>{seq_width}}   {when} {'no result':<16} {_or(row.get('tool_name'))} ({_or(row.get('action_type'))}) "
            f"{clip(row.get('args_summary'), ARGS_WIDTH)}")


def render(path: Path, events: Path | None = None) -> Iterator[str]:
    """Lines describing a trace file, with the unanswered calls of ``events`` (if given) in place."""
    from rematch_trace.report.audit import actions

    tracker = FlagTracker()
    call_ids: set[str] = set()
    last_seq = 0
    for rec in trace_records(path):
        if rec:
            tracker.observe(rec)
            if isinstance(rec.get("call_id"), str):
                call_ids.add(rec["call_id"])
            if type(rec.get("seq")) is int:
                last_seq = max(last_seq, rec["seq"])
    why: dict[int, list[str]] = {}
    for reason, seqs in tracker.seqs().items():
        for s in seqs:
            why.setdefault(s, []).append(reason)
    width = max(5, len(str(last_seq)))
    pending = []
    if events is not None and events.exists():
        pending = [(_ms(r.get("occurred_at")) or 0, r) for r in actions(events)
                   if r["outcome"] == "unknown" and r["call_id"] not in call_ids]
        pending.sort(key=lambda x: x[0])
    for rec in trace_records(path):
        if not rec:
            yield f"{'?':>{width}}   (unreadable line)"
            continue
        t = rec.get("t") if type(rec.get("t")) is int else None
        while pending and t is not None and pending[0][0] <= t and rec.get("ev") != "session_start":
            yield _unanswered_line(pending.pop(0)[1], width)
        if rec.get("ev") == "session_shutdown":
            for _, row in pending:
                yield _unanswered_line(row, width)
            pending = []
        seq = rec.get("seq")
        yield render_record(rec, why.get(seq) if type(seq) is int else None, width)
    for _, row in pending:
        yield _unanswered_line(row, width)
