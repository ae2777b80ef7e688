"""Session summaries kept in the ledger (its ``summary`` column), made when a session's outputs are.

Each is stored with its *basis*: the size and mtime of the session's trace and events files and
the digest of the prices it was costed at. It stands for the session while its basis still holds
(two ``stat`` calls); otherwise the summary is made again from the trace. ``import``, ``watch``
and live capture call :func:`store_summaries` after writing outputs, so that ``rematch flagged``,
``sessions`` and ``stats`` read summaries only (docs/report.md, "Summaries in the ledger").
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import orjson

from rematch_trace.report.row_fields import SUMMARY_VERSION
from rematch_trace.store.datafolder import DataDir, key_of


def folder_prices_key(data: DataDir) -> str | None:
    """:func:`~rematch_trace.report.prices.source_key` of the prices ``load(data.root)`` would read (the shipped table, then the data
    folder's ``prices.yml``), without parsing them; ``None`` when a file cannot be read."""
    from rematch_trace.report.prices import shipped_text, source_key

    try:
        texts = [shipped_text()]
        user = data.root / "prices.yml"
        if user.exists():
            texts.append(user.read_text("utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    return source_key(texts)


def size_mtime(path: str) -> list[int]:
    """A file's ``[size, mtime_ns]`` (``[-1, -1]`` when it cannot be read): a summary's basis part."""
    try:
        st = os.stat(path)
    except OSError:
        return [-1, -1]
    return [st.st_size, st.st_mtime_ns]


def basis(trace: str, events: str, prices_key: str) -> list[Any]:
    """What a stored summary was made from: its files' size and mtime and the prices' :func:`~rematch_trace.report.prices.source_key`."""
    return [*size_mtime(trace), *size_mtime(events), prices_key]


def stored_summary(stored: Any, now: list[Any]) -> dict[str, Any] | None:
    """The summary JSON of a ledger ``summary`` column when its basis is ``now`` (:func:`basis`), else ``None``."""
    if not isinstance(stored, str | bytes):
        return None
    try:
        value = orjson.loads(stored)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict) or value.get("basis") != now:
        return None
    summary = value.get("summary")
    return summary if isinstance(summary, dict) else None


def store_summaries(data: DataDir, only: set[str] | None = None) -> int:
    """Make and store the summary of every session whose stored one is missing or stale (``only``:
    just these trace keys); how many were made. A price table that cannot be loaded stores none
    (``stats`` says why)."""
    from rematch_trace.store.ledger import Ledger

    if not data.ledger.exists():
        return 0
    # Which summaries still hold is told without the price table (no YAML parsed, no summary code
    # loaded): a rerun that changed nothing costs two stat calls a session.
    prices_key = folder_prices_key(data)
    if prices_key is None:
        return 0
    traces, events_dir = str(data.traces), str(data.events)
    made: list[tuple[str, str, str | None]] = []
    try:
        with Ledger(data.ledger) as ledger:
            stale = []
            # Streamed from the ledger (nothing is written before the loop ends): only the stale are kept,
            # so the memory this takes does not grow with the sessions of an archive whose summaries hold.
            for harness, session_id, trace_path, held in ledger.summary_bases(SUMMARY_VERSION):
                name = os.path.basename(trace_path) if isinstance(trace_path, str) else ""
                key = name[:-6] if name.endswith(".jsonl") else ""
                if not key or (only is not None and key not in only):
                    continue
                trace = os.path.join(traces, f"{key}.jsonl")
                events = os.path.join(events_dir, f"{key}.jsonl")
                b = basis(trace, events, prices_key)  # before reading: a change meanwhile makes it stale
                if held is not None and orjson.loads(held) == b:
                    continue
                stale.append((harness, session_id, trace_path, trace, b))
            if not stale:
                return 0
            from rematch_trace.report.prices import PriceError, load
            from rematch_trace.report.summary import summarize, to_json

            try:
                prices = load(data.root)
            except PriceError:
                return 0
            for harness, session_id, trace_path, trace, b in stale:
                safe = key_of({"trace_path": trace_path})  # a safe name inside traces/, or none
                if safe is None:
                    continue
                b[-1] = prices.source
                row = ledger.session_row(harness, session_id)
                if row is None:
                    continue
                row.pop("summary", None)
                try:
                    summary = summarize(safe, row, Path(trace), prices)
                except OSError:
                    continue
                made.append((row["harness"], row["session_id"],
                             orjson.dumps({"basis": b, "summary": to_json(summary)}).decode()))
            if made:
                ledger.set_summaries(made)
    except sqlite3.Error:
        return 0
    return len(made)
