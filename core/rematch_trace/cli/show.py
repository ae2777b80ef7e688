"""A readable rendering of one trace for the terminal."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson


def _when(t: Any) -> str:
    try:
        return dt.datetime.fromtimestamp(int(t) / 1000, dt.timezone.utc).strftime("%H:%M:%S")
    except (TypeError, ValueError, OverflowError, OSError):
        return "--:--:--"


def _one_line(text: Any, width: int = 100) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= width else s[: width - 1] + "…"


def render_record(r: dict[str, Any]) -> str:
    """One line for one record."""
    ev = r.get("ev")
    head = f"{r.get('seq', '?'):>5} {_when(r.get('t'))} {ev:<16}"
    if ev == "session_start":
        model = r.get("model") or {}
        agent = r.get("agent") or {}
        return (f"{head} {r.get('session_id')} [{agent.get('name')}/{agent.get('kind')}] "
                f"{model.get('provider', '')}/{model.get('id', '')} cwd={r.get('cwd')} remote={r.get('repo_remote')}")
    if ev == "input":
        label = r.get("prelabel")
        tag = "" if label == "none" else f" <{label}>"
        return f"{head}{tag} {_one_line(r.get('text'))}"
    if ev == "tool_result":
        status = f"ERROR {r.get('error_class')}" if r.get("is_error") else "ok"
        return f"{head} {r.get('tool')} {status} {r.get('result_bytes')}B {_one_line(orjson.dumps(r.get('input')).decode(), 60)}"
    if ev == "turn_end":
        u = r.get("usage") or {}
        return f"{head} {u.get('totalTokens', 0)} tok {r.get('stop_reason') or ''} {_one_line(r.get('text_head'), 70)}"
    if ev == "model_change":
        f, t = r.get("from") or {}, r.get("to") or {}
        return f"{head} {f.get('id')} -> {t.get('id')}"
    if ev == "agent_end":
        return f"{head} turns={r.get('turns')}"
    if ev == "session_shutdown":
        return f"{head} flagged={r.get('flagged')} reasons={','.join(r.get('reasons') or []) or '-'}"
    return f"{head} {_one_line(orjson.dumps({k: v for k, v in r.items() if k not in ('seq', 't', 'ev')}).decode())}"


def render(path: Path) -> Iterator[str]:
    """Lines describing a trace file."""
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                try:
                    yield render_record(orjson.loads(line))
                except orjson.JSONDecodeError:
                    yield "(unreadable line)"
