"""Streaming a Claude Code transcript's lines (the core opens plain, gzip and zstd)."""

from __future__ import annotations

from collections.abc import Iterator

from rematch_trace.host.source import Problem, RawRecord, Source
from rematch_trace.importing.reader import read_source, require_c_backend

from .discover import KNOWN_TYPES

_IGNORED_TYPES = (b'"type":"progress"', b'"type":"file-history-snapshot"')


def ignorable(raw: bytes) -> bool:
    """Whether a raw line is a top-level progress or file-history line (never counted).

    A third of a 2.1 transcript's bytes are progress lines; skipping them
    unparsed is the cheapest way through. Only a ``"type"`` key that comes
    before any nested object or array is the line's own, so a tool input that
    happens to hold ``"type":"progress"`` is never mistaken for one.
    """
    for marker in _IGNORED_TYPES:
        i = raw.find(marker, 0, 1024)
        if i > 0 and raw.find(b"{", 1, i) < 0 and raw.find(b"[", 0, i) < 0:
            return True
    return False


def read(source: Source, start: int) -> Iterator[RawRecord | Problem]:
    """Check the ijson backend now, then stream the source's records from ``start``."""
    require_c_backend()
    return _records(source, start)


def _records(source: Source, start: int) -> Iterator[RawRecord | Problem]:
    path = str(source.path)
    known = KNOWN_TYPES
    for item in read_source(source, start, skip=ignorable):
        if type(item) is RawRecord:
            typ = item.value.get("type")
            # A type Claude Code writes (a hostile list or object is not one).
            if type(typ) is not str or typ not in known:
                # Reported, and still passed on so the resume offset moves past it.
                yield Problem(path, item.line, f"unknown line type {typ!r:.60}; skipped", "unknown_type")
        yield item

