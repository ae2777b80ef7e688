"""Builders for small omp session files the omp tests write themselves."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import rematch_omp
from rematch_trace.host.source import Problem, RawRecord, Source

SID = "0198cc2a-0000-7000-8000-000000000001"
CWD = "/home/dev/proj"
HEADER_TS = "2026-08-21T14:02:10.500Z"


def title_slot(title: str = "a title") -> dict[str, Any]:
    """omp's first-line title slot (padding to 256 bytes is cosmetic here)."""
    return {"type": "title", "v": 1, "title": title, "source": "auto", "pad": " " * 40}


def header(version: int | None = 3, sid: str = SID, cwd: str = CWD, **extra: Any) -> dict[str, Any]:
    """A session header; ``version=None`` leaves the field out (format v1)."""
    h: dict[str, Any] = {"type": "session", "id": sid, "timestamp": HEADER_TS, "cwd": cwd}
    if version is not None:
        h["version"] = version
    h.update(extra)
    return h


class Tree:
    """Entries of a v3 session, each a child of the current leaf unless told otherwise."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self.leaf: str | None = None
        self._n = 0
        self._sec = 0

    def add(self, type_: str, parent: str | bool | None = True, **payload: Any) -> str:
        """Append an entry; ``parent=True`` hangs it off the current leaf. Returns its id."""
        self._n += 1
        self._sec += 1
        eid = f"e{self._n:07d}"
        pid = self.leaf if parent is True else parent
        entry = {"type": type_, "id": eid, "parentId": pid, "timestamp": f"2026-08-21T14:{self._sec // 60:02d}:{self._sec % 60:02d}.000Z"}
        entry.update(payload)
        self.entries.append(entry)
        self.leaf = eid
        return eid

    def msg(self, message: dict[str, Any], parent: str | bool | None = True) -> str:
        """Append a ``message`` entry."""
        return self.add("message", parent, message=message)


def user(text: str, **extra: Any) -> dict[str, Any]:
    """A user message."""
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1787320942586, **extra}


def assistant(
    text: str = "",
    calls: list[tuple[str, str, Any]] | None = None,
    stop: str = "stop",
    provider: str = "anthropic",
    model: str = "claude-opus-4-5",
    usage: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """An assistant message with optional text and ``(id, name, arguments)`` tool calls."""
    content: list[dict[str, Any]] = [{"type": "thinking", "thinking": "hmm"}]
    if text:
        content.append({"type": "text", "text": text})
    for cid, name, args in calls or []:
        content.append({"type": "toolCall", "id": cid, "name": name, "arguments": args})
    u = usage if usage is not None else {
        "input": 10, "output": 5, "cacheRead": 100, "cacheWrite": 7, "totalTokens": 122,
        "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.3},
    }
    return {
        "role": "assistant", "content": content, "api": "anthropic-messages", "provider": provider,
        "model": model, "usage": u, "stopReason": stop, "timestamp": 1787320942599, **extra,
    }


def result(call_id: str, text: str, is_error: bool = False, tool: str = "read", **extra: Any) -> dict[str, Any]:
    """A toolResult message."""
    return {
        "role": "toolResult", "toolCallId": call_id, "toolName": tool,
        "content": [{"type": "text", "text": text}], "isError": is_error, "timestamp": 1787320958916, **extra,
    }


def write(path: Path, lines: list[Any], gz: bool = False) -> Path:
    """Write JSON values (or raw ``str`` lines as they are) one per line."""
    # Compact, as omp's JSON.stringify writes it.
    body = "".join((x if isinstance(x, str) else json.dumps(x, separators=(",", ":"))) + "\n" for x in lines).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        with gzip.open(path, "wb") as f:
            f.write(body)
    else:
        path.write_bytes(body)
    return path


def source_of(path: Path, hint: str | None = "omp") -> Source:
    """The Source the plugin claims ``path`` with (asserting it does): by default as found in omp's own
    folders (a file named by path is omp's only when omp wrote it: test_omp_discover.py)."""
    src = rematch_omp.detect_source(path=path, head=path.read_bytes()[:4096], hint=hint)
    assert src is not None, f"omp plugin did not claim {path}"
    return src


def read(src: Source, start: int = 0) -> tuple[list[RawRecord], list[Problem]]:
    """The plugin's records and problems for a source."""
    it = rematch_omp.read_transcript(source=src, start=start)
    assert it is not None
    recs: list[RawRecord] = []
    probs: list[Problem] = []
    for item in it:
        (recs if isinstance(item, RawRecord) else probs).append(item)
    return recs, probs


def translate(src: Source, recs: list[RawRecord], state: dict[str, Any] | None = None) -> list[Any]:
    """The plugin's neutral records for raw records."""
    it: Iterator[Any] | None = rematch_omp.to_trace_records(source=src, records=iter(recs), state=state if state is not None else {})
    assert it is not None
    return list(it)


def neutral(path: Path) -> list[Any]:
    """Full import of a file to neutral records."""
    src = source_of(path)
    recs, _ = read(src)
    return translate(src, recs)
