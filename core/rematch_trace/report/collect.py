"""Every session of a data folder as a summary, read through the ledger, with a cache that follows it.

A session's *stamp* is a digest of its ledger row and of the size and mtime of
its trace and events files: the import rewrites one of them whenever the
session changes. A summary cached under the same stamp is reused without
reading the trace, which is what makes a rerun of ``rematch report`` (and
``rematch sessions`` / ``stats`` after a report) cost about a ledger read.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import orjson

from rematch_trace.report.summary import SessionSummary, from_json, summarize
from rematch_trace.store.datafolder import DataDir

#: What a trace file name (the ledger's ``trace_path``, inside ``traces/``) may look like: a safe name.
_KEY = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9._-]{0,127}|_[0-9a-f]{40})(?:~\d+)?")
#: The cache file of a report folder.
CACHE_NAME = "summaries.json"


class NothingImported(Exception):
    """The data folder has no ledger yet."""


def ledger_rows(data: DataDir) -> list[dict[str, Any]]:
    """Every session row of the ledger (``NothingImported`` when there is none)."""
    from rematch_trace.store.ledger import Ledger

    if not data.ledger.exists():
        raise NothingImported(f"nothing imported into {data.root} yet; run: rematch import")
    with Ledger(data.ledger, readonly=True) as ledger:  # also in a read-only data folder
        return ledger.sessions()


def key_of(row: Mapping[str, Any]) -> str | None:
    """The name a session's outputs go by (its trace file's stem), or ``None`` if the row's path is not safe."""
    path = row.get("trace_path")
    if not isinstance(path, str):
        return None
    p = Path(path)
    if p.suffix != ".jsonl" or p.parent.name != "traces" or not _KEY.fullmatch(p.stem):
        return None
    return p.stem


def _stat(path: Path) -> list[int]:
    try:
        st = os.stat(path)
    except OSError:
        return [-1, -1]
    return [st.st_size, st.st_mtime_ns]


def stamp(row: Mapping[str, Any], trace: Path, events: Path) -> str:
    """A digest that changes whenever the session's ledger row, trace or events file does."""
    blob = orjson.dumps([dict(row), _stat(trace), _stat(events)], option=orjson.OPT_SORT_KEYS, default=str)
    return hashlib.sha256(blob).hexdigest()[:32]


@attrs.define
class Entry:
    """One session as collected: its row, stamp, summary, and whether the summary was recomputed."""

    key: str
    row: dict[str, Any]
    stamp: str
    trace: Path
    events: Path
    summary: SessionSummary
    fresh: bool
    call_ids: set[str] | None = None
    cached: dict[str, Any] | None = None  # the summary's JSON as the cache held it (written back as it is)


@attrs.define
class Collected:
    """The sessions of a data folder, newest first, and the one-line problems met."""

    entries: list[Entry]
    problems: list[str]
    reused: int


def read_cache(path: Path) -> tuple[dict[str, dict[str, Any]], str | None, str | None]:
    """``key -> {"stamp", "summary", "page"}`` from a report's cache file, the build it was made by and the
    digest of what its index was made from; empty and ``None`` if the file is missing or not readable."""
    try:
        value = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}, None, None
    if not isinstance(value, dict):
        return {}, None, None
    sessions = value.get("sessions")
    build = value.get("build") if isinstance(value.get("build"), str) else None
    index = value.get("index") if isinstance(value.get("index"), str) else None
    return ({k: v for k, v in sessions.items() if isinstance(v, dict)} if isinstance(sessions, dict) else {}), build, index


def newest_first(entries: list[Entry]) -> None:
    """Sort in place: newest start first, then harness and id (a stable order)."""
    entries.sort(key=lambda e: (-(e.summary.started or 0), e.summary.harness, e.summary.session_id))


def collect(data: DataDir, cache: Mapping[str, Mapping[str, Any]]) -> Collected:
    """Summaries of every session in the ledger, reusing ``cache`` entries whose stamp still matches.

    A session whose trace cannot be read is a problem line, not a crash; the others still count.
    """
    entries: list[Entry] = []
    problems: list[str] = []
    reused = 0
    seen: set[str] = set()
    for row in ledger_rows(data):
        key = key_of(row)
        if key is None or key in seen:
            problems.append(f"session {row.get('session_id')!r}: unusable trace path {row.get('trace_path')!r}; skipped")
            continue
        seen.add(key)
        trace = data.traces / f"{key}.jsonl"
        events = data.events / f"{key}.jsonl"
        st = stamp(row, trace, events)
        cached = cache.get(key)
        summary = from_json(cached.get("summary")) if cached and cached.get("stamp") == st else None
        if summary is not None:
            reused += 1
            assert cached is not None
            entries.append(Entry(key, row, st, trace, events, summary, fresh=False, cached=cached.get("summary")))
            continue
        ids: set[str] = set()
        try:
            summary = summarize(key, row, trace, ids)
        except OSError as err:
            problems.append(f"{trace}: {err.strerror or err}; session {row.get('session_id')!r} skipped")
            continue
        entries.append(Entry(key, row, st, trace, events, summary, fresh=True, call_ids=ids))
    newest_first(entries)
    return Collected(entries, problems, reused)


def since_filter(entries: list[Entry], since: str | None) -> Iterator[Entry]:
    """The entries whose session started on or after the day ``since`` (``YYYY-MM-DD``); all if ``None``."""
    for e in entries:
        if since is None or (e.summary.day is not None and e.summary.day >= since):
            yield e
