"""Fixture builders for the Claude Code plugin's tests: transcript lines the tests write themselves."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import orjson

import rematch_claude_code as plugin
from rematch_trace.host.source import RawRecord, Source
from rematch_trace.host.vocab import Neutral
from rematch_trace.testing import SynthesizedSession, synthesize_file

SID = "11111111-2222-3333-4444-555555555555"
MODEL = "claude-sonnet-4-5-20250929"


class Lines:
    """Builds Claude Code transcript lines with increasing timestamps and unique uuids."""

    def __init__(self, session_id: str = SID) -> None:
        self.session_id = session_id
        self._n = itertools.count(1)
        self.last_uuid: str | None = None

    def _base(self, typ: str, **extra: Any) -> dict[str, Any]:
        n = next(self._n)
        uuid = f"u-{self.session_id[:8]}-{n:05d}"
        line: dict[str, Any] = {
            "parentUuid": self.last_uuid,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/work/project",
            "sessionId": self.session_id,
            "version": "2.1.39",
            "type": typ,
            "uuid": uuid,
            "timestamp": f"2026-02-10T21:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
        }
        line.update(extra)
        self.last_uuid = uuid
        return line

    def user(self, content: Any, **extra: Any) -> dict[str, Any]:
        """A user line with ``content`` (a string or a list of blocks)."""
        return self._base("user", message={"role": "user", "content": content}, **extra)

    def result(
        self,
        call_id: str,
        content: Any = "ok",
        *,
        is_error: bool | None = None,
        detail: Any = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """A user line carrying one tool result."""
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content}
        if is_error is not None:
            block["is_error"] = is_error
        if detail is not None:
            extra["toolUseResult"] = detail
        return self.user([block], **extra)

    def assistant(
        self,
        mid: str,
        *blocks: dict[str, Any],
        model: str = MODEL,
        usage: dict[str, Any] | None = None,
        stop: str | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """One assistant line (one content block per line, as Claude Code writes them)."""
        message = {
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": list(blocks),
            "stop_reason": stop,
            "usage": usage if usage is not None else {"input_tokens": 1, "output_tokens": 1},
        }
        return self._base("assistant", message=message, requestId=f"req_{mid}", **extra)

    def system(self, subtype: str, **extra: Any) -> dict[str, Any]:
        """A system line."""
        return self._base("system", subtype=subtype, **extra)

    def line(self, typ: str, **extra: Any) -> dict[str, Any]:
        """Any other line type."""
        return self._base(typ, **extra)


def text(s: str) -> dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": s}


def call(call_id: str, name: str = "Bash", tool_input: Any = None) -> dict[str, Any]:
    """A tool_use content block."""
    return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input or {"command": "ls"}}


def write(path: Path, lines: list[Any]) -> Path:
    """Write ``lines`` as JSONL (strings are written as they are)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for line in lines:
            f.write(line.encode() if isinstance(line, str) else orjson.dumps(line))
            f.write(b"\n")
    return path


def source_of(path: Path, hint: str | None = "claude_code") -> Source:
    """The source the plugin claims ``path`` as (it must claim it)."""
    with open(path, "rb") as f:
        head = f.read(4096)
    src = plugin.detect_source(path, head, hint)
    assert src is not None, f"plugin did not claim {path}"
    return src


def raw_records(src: Source, start: int = 0) -> list[RawRecord]:
    """The parsed records of a source (problems dropped)."""
    it = plugin.read_transcript(src, start)
    assert it is not None
    return [r for r in it if isinstance(r, RawRecord)]


def translate(path: Path, state: dict[str, Any] | None = None) -> list[Neutral]:
    """The neutral records the plugin makes of the file at ``path``."""
    src = source_of(path)
    it = plugin.to_trace_records(src, iter(raw_records(src)), {} if state is None else state)
    assert it is not None
    return list(it)


def records_of(records: list[Neutral], kind: type, stream: str | None = "") -> list[Any]:
    """The records of one type (of one stream; ``None`` for all streams)."""
    return [r for r in records if isinstance(r, kind) and (stream is None or r.stream == stream)]


def synthesize(path: Path) -> list[SynthesizedSession]:
    """The file imported through the core: its sessions' traces."""
    return synthesize_file(path, [plugin], hint="claude_code")


def evs(session: SynthesizedSession, ev: str) -> list[dict[str, Any]]:
    """The trace records of one kind."""
    return [r for r in session.records if r["ev"] == ev]


def session_path(tmp_path: Path, session_id: str = SID) -> Path:
    """Where a main session file goes, laid out as ``~/.claude/projects`` lays it out."""
    return tmp_path / "projects" / "-work-project" / f"{session_id}.jsonl"
