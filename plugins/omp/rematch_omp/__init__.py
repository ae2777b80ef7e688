"""rematch importer for omp (oh-my-pi) and upstream pi session transcripts.

Registered under the ``rematch`` entry-point group as ``omp``. The hooks only
translate: reading the active branch of a session tree (:mod:`.tree`), mapping
its entries to the core's neutral vocabulary (:mod:`.translate`), finding the
files (:mod:`.discover`) and typing tool calls (:mod:`.actions`).
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

# The submodules are imported by the hooks that use them: a rerun that finds nothing to
# read registers this plugin without loading its reader and translator.

__version__ = "0.1.0"
HARNESS = "omp"  # discover.HARNESS, without importing it


@hookimpl
def default_locations() -> Iterable[Location]:
    """omp's session folders (with its env overrides and profiles), its archive, and pi's."""
    from . import discover

    return [Location(HARNESS, p) for p in discover.session_roots(os.environ, Path.home())]


@hookimpl
def detect_source(path: Path, head: bytes, hint: str | None) -> Source | None:
    """Claim ``.jsonl`` / ``.jsonl.gz`` files that start with omp's title slot or session header."""
    from . import discover

    return discover.detect(path, head, hint)


@hookimpl
def read_transcript(source: Source, start: int) -> Iterator[RawRecord | Problem]:
    """The active branch of the session tree (a full read), or the lines after ``start``."""
    from . import tree

    return tree.read(source, start)


@hookimpl
def conversation_items(source: Source, records: Iterator[RawRecord]) -> Iterator[Item]:
    """What was said and shown in a claimed file, for the conversation view and search."""
    from . import conversation

    return conversation.items(source, records)


@hookimpl
def to_trace_records(source: Source, records: Iterator[RawRecord], state: dict[str, Any]) -> Iterator[Neutral]:
    """Translate omp entries to neutral records; see :mod:`rematch_omp.translate`."""
    from . import translate

    return translate.translate(source, records, state)


@hookimpl
def classify_action(tool: str) -> str:
    """Type an omp tool call by its tool name."""
    from . import actions

    return actions.classify(tool)


@hookimpl
def live_records(event: dict[str, Any], t: int) -> list[Neutral]:
    """The records of one event rematch's pi/omp extension handed over; see :mod:`rematch_omp.live`.

    The core asks only the plugin that owns the harness (the one whose ``default_locations``
    name it): no guard on ``harness`` here.
    """
    from . import live

    return live.records(event, t)


@hookimpl
def hook_denial(verdict: dict[str, Any]) -> bytes | None:
    """The deny line the extension reads from ``rematch-hook omp`` (``{"block": true, "reason": ...}``)."""
    from . import live

    return live.denial(verdict)
