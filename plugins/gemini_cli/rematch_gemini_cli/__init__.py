"""rematch importer for Gemini CLI sessions.

Registered under the ``rematch`` entry-point group as ``gemini_cli``. Written
against the public plugin contract only: the hooks find Gemini CLI's session
folders (:mod:`.discover`), read a session (:mod:`.read`: the JSON-lines log of
0.61 and later, or the JSON document older versions rewrite whole), map its
records to the neutral vocabulary (:mod:`.translate`) and type tool calls
(:mod:`.actions`). The format is described in ``docs/gemini-cli-format.md``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rematch_trace.host.hookspecs import hookimpl
from rematch_trace.host.source import Location, Problem, RawRecord, Source

if TYPE_CHECKING:
    from rematch_trace.host.conversation import Item
    from rematch_trace.host.vocab import Neutral

# The submodules are imported by the hooks that use them: every command imports every plugin.

__version__ = "0.1.0"
HARNESS = "gemini_cli"


@hookimpl
def default_locations() -> Iterable[Location]:
    """``$GEMINI_CLI_HOME/.gemini/tmp`` (else ``~/.gemini/tmp``): one folder per project, ``chats/`` in each."""
    from . import discover

    return [Location(HARNESS, discover.sessions_root(os.environ, Path.home()))]


@hookimpl
def transcript_suffixes() -> Iterable[str]:
    """``.json``: the session documents Gemini CLI wrote before its JSON-lines log."""
    return (".json",)


@hookimpl
def detect_source(path: Path, head: bytes, hint: str | None) -> Source | None:
    """Claim a ``session-*.jsonl`` / ``.json`` (or a subagent's) whose first record is a session's metadata."""
    from . import discover

    return discover.detect(path, head, hint)


@hookimpl
def read_transcript(source: Source, start: int) -> Iterator[RawRecord | Problem]:
    """The log's lines after ``start``, or a document's records (see :mod:`rematch_gemini_cli.read`)."""
    from . import read

    return read.read(source, start)


@hookimpl
def to_trace_records(source: Source, records: Iterator[RawRecord], state: dict[str, Any]) -> Iterator[Neutral]:
    """Translate Gemini CLI records to neutral records; see :mod:`rematch_gemini_cli.translate`."""
    from . import translate

    return translate.translate(source, records, state)


@hookimpl
def classify_action(tool: str) -> str:
    """Type a Gemini CLI tool call by its tool name."""
    from . import actions

    return actions.classify(tool)


@hookimpl
def conversation_items(source: Source, records: Iterator[RawRecord]) -> Iterator[Item]:
    """What was said and shown in a session, for the conversation view and search; see
    :mod:`rematch_gemini_cli.conversation`."""
    from . import conversation

    return conversation.items(source, records)
