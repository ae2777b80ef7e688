"""Reading an omp session file: only the entries of its active branch.

An omp session is a tree: every entry names its ``parentId``, branching never
rewrites old lines, and after a reload omp's active leaf is the *last physical
entry* of the file. The session is the path from that leaf back to the root
(stopping at a repeated id). Entries on abandoned branches are not the session.

A full read therefore takes two passes over the file, so memory stays bounded by
the number of entries rather than their size:

1. an index pass keeps only ``(id, parentId, line)`` per entry, reading the ids
   off the start (or end) of a line with an anchored pattern where omp's key order
   allows it and parsing the line otherwise, and walks the active path;
2. the record pass streams the file through :func:`rematch_trace.importing.reader.read_jsonl`
   and yields the title slot, the header and the entries on the path.

Format versions 1 (pi <= 0.30: entries without ids) are linear: omp's migration
gives each entry the previous one as parent, so every entry is on the path and
the index pass is skipped.

On a resume (``start > 0``) the new lines are streamed as they are; the
translator checks that they extend the saved leaf (see :mod:`.translate`).
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from typing import IO

from rematch_trace.host.source import Problem, RawRecord, Source
from rematch_trace.importing.reader import (
    BIG_LINE,
    loads,
    open_source,
    read_jsonl,
    read_source,
    report_damage,
)

_BOM = b"\xef\xbb\xbf"
_CHUNK = 1024 * 1024
# omp >= 16 writes ``type``, ``id``, ``parentId`` first: read them off the line's start.
# Anchored at ``{`` and with quote-free values, these can only be top-level keys.
_HEAD_IDS = re.compile(
    rb'^\{\s*"type"\s*:\s*"[^"\\]*"\s*,\s*"id"\s*:\s*"([^"\\]*)"\s*,\s*"parentId"\s*:\s*(?:null|"([^"\\]*)")\s*[,}]'
)
# omp's migrations append ``id``, ``parentId`` (sometimes ``timestamp``) last. A value
# ending right before the line's final ``}`` belongs to the top-level object.
_TAIL_IDS = re.compile(
    rb'[{,]\s*"id"\s*:\s*"([^"\\]*)"\s*,\s*"parentId"\s*:\s*(?:null|"([^"\\]*)")'
    rb'(?:\s*,\s*"timestamp"\s*:\s*"[^"\\]*")?\s*\}\s*$'
)
_TAIL_BYTES = 512
_NO_LIMIT = 1 << 62


def is_title_slot(value: dict[str, object]) -> bool:
    """Whether a first-line record is omp's fixed-width title slot."""
    return value.get("type") == "title" and value.get("v") == 1


def is_header(value: dict[str, object]) -> bool:
    """Whether a record is a session header omp's loader accepts."""
    return value.get("type") == "session" and isinstance(value.get("id"), str)


def format_version(header: dict[str, object]) -> int:
    """The header's session-format version (absent or unusable means 1)."""
    v = header.get("version")
    return v if isinstance(v, int) and not isinstance(v, bool) else 1


class Index:
    """What the index pass learnt: the header line, the lines of the active path."""

    __slots__ = ("header_line", "last_line", "linear", "path_lines")

    def __init__(self) -> None:
        self.header_line = 0  # 0: no header found
        self.last_line = 0
        self.linear = False
        self.path_lines: set[int] = set()


def _rest_of_line(f: IO[bytes], chunk: bytes) -> tuple[bytes, bool]:
    """Skip to the end of a long line; return its last bytes and whether it ended in ``\\n``."""
    tail = chunk[-_TAIL_BYTES:]
    while not chunk.endswith(b"\n"):
        chunk = f.readline(_CHUNK)
        if not chunk:
            return tail, False
        tail = (tail + chunk)[-_TAIL_BYTES:]
    return tail, True


def _add_node(nodes: dict[str, tuple[int, str | None]], m: re.Match[bytes], lineno: int) -> str:
    """Record the entry whose ids a pattern read off line ``lineno``; return its id."""
    eid = m.group(1).decode("utf-8", "replace")
    parent = m.group(2)
    nodes[eid] = (lineno, parent.decode("utf-8", "replace") if parent is not None else None)
    return eid


def index(f: IO[bytes]) -> Index:
    """The index pass over a stream at offset 0: find the header and the active path."""
    idx = Index()
    nodes: dict[str, tuple[int, str | None]] = {}
    last: str | None = None
    lineno = 0
    while True:
        try:
            raw = f.readline(BIG_LINE)
        except (EOFError, zlib.error, gzip.BadGzipFile):
            break  # a cut-off archive: index what came before; the read pass reports it
        if not raw:
            break
        lineno += 1
        big = len(raw) == BIG_LINE and not raw.endswith(b"\n")
        if lineno == 1 and raw.startswith(_BOM):
            raw = raw[3:]
        if big:
            # A line too big to hold: only its ends are looked at.
            tail, complete = _rest_of_line(f, raw)
            idx.last_line = lineno
            if not idx.header_line:
                continue  # omp never writes a multi-MiB header; the header search goes on
            m = _HEAD_IDS.match(raw) or (_TAIL_IDS.search(tail) if complete else None)
            if m is not None:
                last = _add_node(nodes, m, lineno)
            continue
        complete = raw.endswith(b"\n")
        body = raw.strip()
        if not body:
            continue
        if idx.header_line and complete:
            m = _HEAD_IDS.match(body) or _TAIL_IDS.search(body[-_TAIL_BYTES:])
            if m is not None:
                idx.last_line = lineno
                last = _add_node(nodes, m, lineno)
                continue
        try:
            value = loads(body)
        except ValueError:
            if not complete:
                break  # a torn last line: read_jsonl leaves it for the next run too
            idx.last_line = lineno
            continue
        idx.last_line = lineno
        if not isinstance(value, dict):
            continue
        if not idx.header_line:
            if lineno == 1 and is_title_slot(value):
                continue
            if not is_header(value):
                return idx  # omp rejects a file whose first record is not the header
            idx.header_line = lineno
            if format_version(value) < 2:
                # Linear: every entry is on the path, so nothing more to learn here.
                idx.linear = True
                idx.last_line = _NO_LIMIT
                return idx
            continue
        eid = value.get("id")
        if isinstance(eid, str):
            pid = value.get("parentId")
            last = eid
            nodes[eid] = (lineno, pid if isinstance(pid, str) else None)
    # The leaf is the last entry; walk to the root, stopping at a repeat or a missing parent.
    cur = last
    path = idx.path_lines
    while cur is not None:
        node = nodes.get(cur)
        if node is None or node[0] in path:
            break
        path.add(node[0])
        cur = node[1]
    return idx


#: Entry types omp (to 18.2) and pi write; a line of any other is reported and skipped.
KNOWN_TYPES = frozenset({
    "title", "session", "message", "thinking_level_change", "model_change", "service_tier_change",
    "compaction", "branch_summary", "reset_boundary", "custom", "custom_message", "label",
    "title_change", "ttsr_injection", "credential_pin", "session_init", "mode_change",
    "model_usage", "archive", "session_info",
})


def _with_unknown_types(items: Iterator[RawRecord | Problem], name: str,
                        source_harness: str) -> Iterator[RawRecord | Problem]:
    """Pass records through, reporting every line of an entry type omp (or pi) does not write.

    Each is a skipped line (its data is lost), counted as every other one is;
    the core prints a few per file and counts the rest.
    """
    for item in items:
        if isinstance(item, RawRecord):
            typ = item.value.get("type")
            if not isinstance(typ, str) or typ not in KNOWN_TYPES:
                label = typ if isinstance(typ, str) else repr(typ)[:40]
                yield Problem(name, item.line, f"unknown {source_harness} entry type {label!r} (skipped)", "unknown_type")
        yield item


def read(source: Source, start: int) -> Iterator[RawRecord | Problem]:
    """Stream a source's records: the active branch on a full read, new lines on a resume."""
    name = str(source.path)
    items = read_source(source, start) if start > 0 else report_damage(source, _read_branch(source))
    return _with_unknown_types(items, name, source.harness)


def _read_branch(source: Source) -> Iterator[RawRecord | Problem]:
    name = str(source.path)
    with open_source(source) as f:
        idx = index(f)
    if not idx.header_line:
        yield Problem(name, 0, f"not a {source.harness} session: no session header", "no_header")
        return
    with open_source(source) as f:
        for item in read_jsonl(f, name, 0):
            if isinstance(item, Problem):
                if item.line <= idx.last_line or item.kind == "truncated_tail":
                    yield item
                continue
            line = item.line
            if line > idx.last_line:
                # Appended since the index pass: the next run takes it.
                return
            if line <= idx.header_line or idx.linear or line in idx.path_lines:
                yield item
