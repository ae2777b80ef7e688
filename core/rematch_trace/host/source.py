"""What the core knows of a transcript file before and while it reads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, NamedTuple

import attrs

Compression = Literal["", "zst", "gz"]


@attrs.frozen(slots=True)
class Location:
    """A folder where a harness keeps its transcripts by default.

    :param names: file-name patterns (:mod:`fnmatch`, e.g. ``"*.db"``, ``"ses_*.json"``)
        of sources that do not end ``.jsonl`` (``.jsonl.zst``, ``.jsonl.gz``): discovery lists the
        files matching any loaded plugin's patterns too, under its default folders and under any
        folder the user names, and offers them to ``detect_source``.
    """

    harness: str
    path: Path
    names: tuple[str, ...] = ()


@attrs.frozen(slots=True)
class Source:
    """One transcript file claimed by a harness plugin.

    :param harness: the plugin's harness name (``claude_code``, ``codex``, ``omp``...).
    :param path: the file.
    :param agent_kind: ``"sub"`` when the layout says the file is a subagent's.
    :param compression: ``"zst"`` or ``"gz"`` for compressed files, else ``""``.
    :param parent: the parent session's file, for subagent layouts that show it.
    :param mutable_prefix: bytes at the start that the harness rewrites in place
        (omp's title slot); change detection ignores them.
    :param rewritten: the harness rewrites the file whole as it grows (a JSON document, not
        a log): change detection compares none of its bytes, the positions the plugin's
        records give (``RawRecord.offset``/``end``) are its own (record numbers, say), and
        a changed file is handed back to the plugin with its saved state, the plugin
        deciding whether the records imported are still the file's first ones (else it
        raises :class:`~rematch_trace.errors.RestartImport`).
    :param plugin: the name of the plugin that claimed the file, set by the core
        (a plugin leaves it empty); every later per-source hook goes to that
        plugin only. Not part of equality: it says who answered, not what the file is.
    """

    harness: str
    path: Path
    agent_kind: Literal["main", "sub"] = "main"
    compression: Compression = ""
    parent: Path | None = None
    mutable_prefix: int = 0
    rewritten: bool = False
    plugin: str = attrs.field(default="", eq=False)


class RawRecord(NamedTuple):
    """One parsed line of a transcript.

    :param line: 1-based physical line number.
    :param offset: byte offset of the line's start (in the decompressed stream).
    :param end: byte offset just past the line's newline; resuming at ``end``
        continues after this record.
    :param value: the parsed JSON value (any type: plugins check it).

    A named tuple, not an attrs class: the reader makes one per line, and a
    tuple is built in a fraction of a frozen attrs instance's time. It is as
    immutable, and its fields are read the same way.
    """

    line: int
    offset: int
    end: int
    value: Any


@attrs.frozen(slots=True)
class Problem:
    """A line or file the reader could not use, reported with its place."""

    path: str
    line: int
    message: str
    kind: str = "malformed"

    @property
    def skipped_data(self) -> bool:
        """Whether data was lost (a bad or oversized line, a record of a type the plugin does not know,
        an unreadable rest of file), not merely noted."""
        return self.kind in ("malformed", "oversized", "unreadable", "unknown_type")

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"
