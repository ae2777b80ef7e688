"""rematch plugin for OpenAI Codex CLI rollouts (``$CODEX_HOME/sessions/**/rollout-*.jsonl``).

The hooks below only dispatch; the rules live in :mod:`.discover` (where
rollouts are and how to read them), :mod:`.translate` (lines to the neutral
vocabulary), :mod:`.results` (tool errors), :mod:`.usage` (token counts),
:mod:`.usertext` (typed versus injected user text), :mod:`.skills` (offered and
loaded skills) and :mod:`.actions` (security action types).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
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
HARNESS = "codex"  # discover.HARNESS, without importing it


@hookimpl
def default_locations() -> Iterable[Location]:
    """``$CODEX_HOME/sessions`` and ``$CODEX_HOME/archived_sessions`` (``~/.codex`` by default)."""
    from . import discover

    return discover.locations()


@hookimpl
def detect_source(path: Path, head: bytes, hint: str | None) -> Source | None:
    """Claim Codex rollouts (``.jsonl`` or ``.jsonl.zst``) by name and first line."""
    from . import discover

    return discover.detect(path, head, hint)


@hookimpl
def read_transcript(source: Source, start: int) -> Iterator[RawRecord | Problem]:
    """Stream a rollout, decompressing ``.zst`` on the fly, from byte ``start``."""
    from . import discover

    return discover.read(source, start)


@hookimpl
def conversation_items(source: Source, records: Iterator[RawRecord]) -> Iterator[Item]:
    """What was said and shown in a claimed file, for the conversation view and search."""
    from . import conversation

    return conversation.items(source, records)


@hookimpl
def to_trace_records(
    source: Source, records: Iterator[RawRecord], state: dict[str, Any]
) -> Iterator[Neutral]:
    """Translate rollout lines into neutral records (see :mod:`.translate`)."""
    from . import translate

    return translate.translate(source, records, state)


@hookimpl
def visible_entries(text: str) -> Iterable[str]:
    """The rematch entries a Codex catalog (AGENTS.md-era or ``<skills_instructions>``) offers.

    Only skills with a ``rematch.json`` beside their file are rematch entries.
    """
    from . import skills

    return skills.offered_entries(text)


@hookimpl
def classify_action(tool: str, tool_input: Any) -> str:
    """The security action type of a Codex tool call."""
    # Once per tool call: the classifier is looked up once, not imported on every call.
    return (_classify or _classifier())(tool, tool_input)


_classify: Callable[[str, Any], str] | None = None


def _classifier() -> Callable[[str, Any], str]:
    global _classify
    from . import actions

    _classify = actions.classify
    return _classify


@hookimpl
def live_records(event: dict[str, Any], t: int) -> list[Neutral]:
    """The neutral records of one Codex hook payload (live capture; see :mod:`.live`).

    The core asks only the plugin that owns the harness (the one whose ``default_locations``
    name it): no guard on ``harness`` here.
    """
    from . import live

    return live.records(event, t)


@hookimpl
def harness_plugin_template() -> Path:
    """The template of Codex's plugin folder this package ships (``rematch hooks folder`` makes it whole)."""
    from . import folder

    return folder.template()


@hookimpl
def hook_denial(verdict: dict[str, Any]) -> bytes | None:
    """Codex's deny of the event the verdict answers (its ``hook_event_name``), as the fast hook
    client prints it: a ``PreToolUse``'s (``hookSpecificOutput.permissionDecision: "deny"`` and the
    reason), a ``PermissionRequest``'s (``hookSpecificOutput.decision: {"behavior": "deny", ...}``).
    """
    from rematch_trace.live.rematch_hook import deny_output

    event = verdict.get("hook_event_name")
    return deny_output(verdict, HARNESS, event if type(event) is str else "PreToolUse")
