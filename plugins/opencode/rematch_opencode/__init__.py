"""rematch importer for opencode sessions.

Registered under the ``rematch`` entry-point group as ``opencode``. opencode keeps its sessions
in ``$XDG_DATA_HOME/opencode``: a SQLite database (``opencode.db``, tables ``session``,
``message``, ``part``) in the versions since its storage moved there, and a tree of small JSON
files (``storage/session/<project>/<session>.json``, ``storage/message/<session>/<message>.json``,
``storage/part/<message>/<part>.json``) before. Both are sources *with members*
(``source_members``): the database with its write-ahead log, a session file with its message
and part files. See ``docs/opencode-format.md``.

The hooks only translate: finding and claiming (:mod:`.where`), reading (:mod:`.store`),
mapping to the neutral vocabulary (:mod:`.translate`) and typing tool calls (:mod:`.actions`).
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

__version__ = "0.1.0"
HARNESS = "opencode"


@hookimpl
def default_locations() -> Iterable[Location]:
    """opencode's data folder (``$XDG_DATA_HOME/opencode``, and the folder of ``$OPENCODE_DB``)."""
    from . import where

    return [Location(HARNESS, p, where.NAMES) for p in where.data_folders(os.environ, Path.home())]


@hookimpl
def detect_source(path: Path, head: bytes) -> Source | None:
    """Claim ``opencode*.db`` SQLite files and ``storage/session/*/ses_*.json`` session files."""
    from . import where

    return where.detect(path, head)


@hookimpl
def source_members(path: Path) -> list[Path] | None:
    """The database's write-ahead log; a session file's message and part files (and their folders)."""
    from . import where

    return where.members(path)


@hookimpl
def member_source(path: Path) -> Path | None:
    """The database of a ``-wal`` file; the session file of a message or part file."""
    from . import where

    return where.owner(path)


@hookimpl
def read_transcript(source: Source, start: int) -> Iterator[RawRecord | Problem]:
    """Sessions and messages (each with its parts) of the database or the session tree."""
    from . import store

    return store.read(source, start)


@hookimpl
def to_trace_records(source: Source, records: Iterator[RawRecord], state: dict[str, Any]) -> Iterator[Neutral]:
    """Translate opencode sessions and messages to neutral records; see :mod:`rematch_opencode.translate`."""
    from . import translate

    return translate.translate(source, records, state)


@hookimpl
def conversation_items(source: Source, records: Iterator[RawRecord]) -> Iterator[Item]:
    """What was said and shown in a database's or a tree's sessions, for the conversation view and search;
    see :mod:`rematch_opencode.conversation`."""
    from . import conversation

    return conversation.items(source, records)


@hookimpl
def classify_action(tool: str) -> str:
    """Type an opencode tool call by its tool name."""
    from . import actions

    return actions.classify(tool)
