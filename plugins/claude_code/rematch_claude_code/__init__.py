"""rematch's Claude Code importer: the hooks of harness ``claude_code``.

Reads the transcripts Claude Code writes under ``$CLAUDE_CONFIG_DIR/projects``
(else ``~/.claude/projects``), versions 1.0 to 2.1, including the three
subagent layouts, and translates them into the core's neutral vocabulary.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rematch_trace.host.hookspecs import hookimpl
from rematch_trace.host.source import Location, Problem, RawRecord, Source
from rematch_trace.host.vocab import Neutral

from . import actions, discover, live, reader, skills, translate

__version__ = "0.1.0"
HARNESS = discover.HARNESS


@hookimpl
def default_locations() -> list[Location]:
    """``$CLAUDE_CONFIG_DIR/projects``, else ``~/.claude/projects``."""
    return discover.locations()


@hookimpl
def detect_source(path: Path, head: bytes, hint: str | None) -> Source | None:
    """Claim Claude Code transcripts; ``agent-*.jsonl`` files are subagent sessions."""
    return discover.detect(path, head, hint)


@hookimpl
def read_transcript(source: Source, start: int) -> Iterator[RawRecord | Problem]:
    """Stream a claimed file's records from byte ``start`` (plain, gzip or zstd)."""
    return reader.read(source, start)


@hookimpl
def to_trace_records(
    source: Source, records: Iterator[RawRecord], state: dict[str, Any]
) -> Iterator[Neutral]:
    """Translate a claimed file's records into neutral records."""
    return translate.translate(source, records, state)


@hookimpl
def visible_entries(text: str) -> list[str]:
    """The rematch entries a session's skill folders offer (the live ``SessionStart`` lists them)."""
    return skills.offered_entries(text)


@hookimpl
def classify_action(tool: str, tool_input: Any) -> str:
    """The security action type of a Claude Code tool call."""
    return actions.action_type(tool, tool_input)


@hookimpl
def live_records(harness: str, event: dict[str, Any], t: int) -> list[Neutral] | None:
    """The neutral records of one Claude Code hook payload (live capture)."""
    if harness != HARNESS:
        return None
    return live.records(event, t)
