"""An example harness plugin for the 'toy' transcript format.

A toy transcript is JSONL whose first line is ``{"toy": 1, "session": ID,
"cwd": DIR}``, followed by lines of these shapes::

    {"t": MS, "user": TEXT}
    {"t": MS, "model": NAME, "say": TEXT, "calls": [{"id": ID, "tool": NAME, "args": {...}}],
     "stop": REASON, "tokens": {"in": N, "out": N}}
    {"t": MS, "result": CALL_ID, "output": TEXT, "error": BOOL}
    {"t": MS, "esc": true}

It shows the whole contract in a page: claim files cheaply, stream them with
the core's reader, and translate each line into the neutral vocabulary. Every
trace rule is the core's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rematch_trace import hookimpl
from rematch_trace.host.source import Location, Problem, RawRecord, Source

if TYPE_CHECKING:
    from rematch_trace.host.vocab import Neutral

#: This plugin is an example, not a harness anyone runs: ``rematch plugins`` and ``rematch doctor``
#: list it apart from the real harnesses.
EXAMPLE = True

# The reader and the vocabulary are imported by the hooks that use them: every command
# loads every plugin, and a rerun that finds nothing new calls neither hook.

__version__ = "0.1.0"
HARNESS = "toy"


@hookimpl
def default_locations() -> list[Location]:
    """Toy transcripts live in ``~/.toy/sessions``."""
    return [Location(HARNESS, Path.home() / ".toy" / "sessions")]


@hookimpl
def detect_source(path: Path, head: bytes) -> Source | None:
    """A toy transcript starts with ``{"toy":``."""
    if path.name.endswith(".jsonl") and head.lstrip().startswith(b'{"toy":'):
        return Source(HARNESS, path)
    return None


@hookimpl
def read_transcript(source: Source, start: int) -> Iterator[RawRecord | Problem]:
    """Stream the file from byte ``start`` with the core's bounded reader."""
    from rematch_trace.importing.reader import read_source

    return read_source(source, start)


@hookimpl
def to_trace_records(source: Source, records: Iterator[RawRecord], state: dict[str, Any]) -> Iterator[Neutral]:
    """Translate toy lines into neutral records."""
    return _translate(records)


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _translate(records: Iterator[RawRecord]) -> Iterator[Neutral]:
    from rematch_trace.host.vocab import (
        OUTPUT_HEAD_CHARS,
        Abort,
        AssistantMessage,
        ModelRef,
        Session,
        ToolCall,
        ToolResult,
        Usage,
        UserMessage,
    )

    for rec in records:
        v = rec.value
        t = v.get("t") if isinstance(v.get("t"), int) else None
        if "toy" in v:
            yield Session("", t, str(v.get("session", "")), cwd=str(v.get("cwd", "")))
        elif isinstance(v.get("user"), str):
            yield UserMessage("", t, v["user"])
        elif "model" in v:
            calls = tuple(
                ToolCall(str(c.get("id", "")), str(c.get("tool", "")), c.get("args"))
                for c in v.get("calls") or []
                if isinstance(c, dict)
            )
            tok = v.get("tokens") if isinstance(v.get("tokens"), dict) else {}
            usage = Usage(input=_int(tok.get("in")), output=_int(tok.get("out")),
                          total=_int(tok.get("in")) + _int(tok.get("out")))
            yield AssistantMessage("", t, ModelRef("toy", str(v["model"])), usage, v.get("stop"),
                                   text=str(v.get("say") or ""), tool_calls=calls)
        elif "result" in v:
            out = str(v.get("output") or "")
            yield ToolResult("", t, str(v["result"]), output_bytes=len(out.encode()), output_head=out[:OUTPUT_HEAD_CHARS],
                             is_error=bool(v.get("error")))
        elif v.get("esc"):
            yield Abort("", t)


@hookimpl
def classify_action(tool: str) -> str:
    """The toy's ``sh`` tool runs shell commands; everything else is ``other``."""
    return "shell_exec" if tool == "sh" else "other"
