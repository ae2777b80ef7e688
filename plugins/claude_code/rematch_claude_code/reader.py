"""Opening a Claude Code transcript (plain, gzip or zstd) and streaming its lines."""

from __future__ import annotations

import gzip
import importlib.util
from collections.abc import Iterator
from typing import IO

from rematch_trace.host.source import Problem, RawRecord, Source
from rematch_trace.importing.reader import read_jsonl, require_c_backend
from rematch_trace.importing.streams import open_zstd

from .discover import KNOWN_TYPES

_SKIP_CHUNK = 1024 * 1024
_READ_BUFFER = 1024 * 1024


def _skip(stream: IO[bytes], n: int) -> None:
    # Compressed streams cannot seek cheaply; read and drop up to the resume point.
    while n > 0:
        got = stream.read(min(n, _SKIP_CHUNK))
        if not got:
            return
        n -= len(got)


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
    try:
        # A large buffer: with the default 8 KiB, readline re-joins every longer line from pieces.
        raw = open(source.path, "rb", buffering=_READ_BUFFER)  # noqa: SIM115 - closed by the with below, after the open can fail
    except OSError as err:
        # Claude Code deletes old transcripts on its own schedule; a file may vanish after discovery.
        yield Problem(path, 0, f"cannot open: {err.strerror or err}", "unreadable")
        return
    with raw:
        stream: IO[bytes]
        if source.compression == "gz":
            stream = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
        elif source.compression == "zst":
            if importlib.util.find_spec("zstandard") is None:
                yield Problem(
                    path,
                    0,
                    "a .zst transcript needs zstandard: pip install 'rematch-claude-code[zstd]'",
                    "unreadable",
                )
                return
            stream = open_zstd(raw)
        else:
            stream = raw
        if start:
            if source.compression:
                _skip(stream, start)
            else:
                raw.seek(start)
        try:
            for item in read_jsonl(stream, path, start, skip=ignorable):
                if type(item) is RawRecord and not _known(item.value.get("type")):
                    # Reported, and still passed on so the resume offset moves past it.
                    yield Problem(
                        path,
                        item.line,
                        f"unknown line type {item.value.get('type')!r:.60}; skipped",
                        "unknown_type",
                    )
                yield item
        except (OSError, EOFError, ValueError) as err:
            # A corrupt compressed stream ends the file, reported, not the import.
            yield Problem(path, 0, f"cannot decompress: {err}", "unreadable")


def _known(typ: object) -> bool:
    """Whether ``typ`` is a line type Claude Code writes (a hostile list or object is not)."""
    return isinstance(typ, str) and typ in KNOWN_TYPES
