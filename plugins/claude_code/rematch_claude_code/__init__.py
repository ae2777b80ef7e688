"""rematch's Claude Code importer: the hooks of harness ``claude_code``.

Reads the transcripts Claude Code writes under ``$CLAUDE_CONFIG_DIR/projects``
(else ``~/.claude/projects``), versions 1.0 to 2.1, including the three
subagent layouts, and translates them into the core's neutral vocabulary.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rematch_trace.host.hookspecs import hookimpl
from rematch_trace.host.source import Location, Problem, RawRecord, Source

if TYPE_CHECKING:
    from rematch_trace.host.conversation import Item
    from rematch_trace.host.vocab import Neutral

# The submodules are imported by the hooks that use them: a rerun that finds nothing to
# read registers this plugin without loading its reader and translator.

__version__ = "0.1.0"
HARNESS = "claude_code"  # discover.HARNESS, without importing it


@hookimpl
def default_locations() -> list[Location]:
    """``$CLAUDE_CONFIG_DIR/projects``, else ``~/.claude/projects``."""
    from . import discover

    return discover.locations()


@hookimpl
def detect_source(path: Path, head: bytes, hint: str | None) -> Source | None:
    """Claim Claude Code transcripts; ``agent-*.jsonl`` files are subagent sessions."""
    from . import discover

    return discover.detect(path, head, hint)


@hookimpl
def read_transcript(source: Source, start: int) -> Iterator[RawRecord | Problem]:
    """Stream a claimed file's records from byte ``start`` (plain, gzip or zstd)."""
    from . import reader

    return reader.read(source, start)


@hookimpl
def conversation_items(source: Source, records: Iterator[RawRecord]) -> Iterator[Item]:
    """What was said and shown in a claimed file, for the conversation view and search."""
    from . import conversation

    return conversation.items(source, records)


@hookimpl
def to_trace_records(
    source: Source, records: Iterator[RawRecord], state: dict[str, Any]
) -> Iterator[Neutral]:
    """Translate a claimed file's records into neutral records."""
    from . import translate

    return translate.translate(source, records, state)


@hookimpl
def visible_entries(text: str) -> list[str]:
    """The rematch entries a session's skill folders offer (the live ``SessionStart`` lists them)."""
    from . import skills

    return skills.offered_entries(text)


#: ``actions.action_type``, imported on the first tool call: this hook runs once per tool call,
#: and a ``from . import`` there costs more than the classification itself.
_action_type: Callable[[str, Any], str] | None = None


@hookimpl
def classify_action(tool: str, tool_input: Any) -> str:
    """The security action type of a Claude Code tool call."""
    global _action_type
    if _action_type is None:
        from .actions import action_type

        _action_type = action_type
    return _action_type(tool, tool_input)


@hookimpl
def live_records(harness: str, event: dict[str, Any], t: int) -> list[Neutral] | None:
    """The neutral records of one Claude Code hook payload (live capture).

    The core asks only the plugin that owns the harness (the one whose ``default_locations``
    name it): no guard on ``harness`` here.
    """
    from . import live

    return live.records(event, t)


@hookimpl
def harness_plugin_template() -> Path:
    """The template of Claude Code's plugin folder this package ships (``rematch hooks folder`` makes it whole)."""
    from . import folder

    return folder.template()


@hookimpl
def hook_denial(harness: str, verdict: dict[str, Any]) -> bytes | None:
    """Claude Code's documented ``PreToolUse`` deny output, as the fast hook client prints it."""
    from rematch_trace.live.rematch_hook import deny_output

    return deny_output(verdict, harness)
