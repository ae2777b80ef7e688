"""Session summaries kept in the ledger (its ``summary`` column), made when a session's outputs are.

Each is stored with its *basis*: the size and mtime of the session's trace and events files and
the digest of the prices it was costed at. It stands for the session while its basis still holds
(two ``stat`` calls); otherwise the summary is made again from the trace. ``import``, ``watch``
and live capture call :func:`store_summaries` after writing outputs, so that ``rematch flagged``,
``sessions`` and ``stats`` read summaries only (docs/report.md, "Summaries in the ledger").
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from rematch_trace.store.datafolder import DataDir
from rematch_trace.trace.reasons import REASONS

#: Bumped whenever what a summary holds changes: cached summaries of another version are recomputed.
SUMMARY_VERSION = 4
#: The version before ``parent`` was kept: such a summary is brought up to date without its trace
#: (:func:`upgrade`).
_NO_PARENT_VERSION = 3


def source_key(texts: list[str]) -> str:
    """A digest of price files' texts, in the order they are layered (:attr:`PriceTable.source`)."""
    h = hashlib.sha256()
    for text in texts:
        data = text.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "big") + data)
    return h.hexdigest()[:32]


def parent_of(row: Mapping[str, Any]) -> str | None:
    """The id of the session that started a ledger row's session, or ``None`` for a main session.

    The row's ``parent`` column (what the transcript named); for a ``sub`` row without one (a
    ledger read before its migration), a Claude Code id's part before its first dot (a subagent,
    sidechain or compaction run is ``<parent id>.<suffix>``). A parent equal to the session
    itself is no parent.
    """
    parent = row.get("parent")
    sid = row.get("session_id")
    if not (isinstance(parent, str) and parent) and row.get("agent_kind") == "sub" and row.get("harness") == "claude_code":
        parent = sid.split(".", 1)[0] if isinstance(sid, str) and "." in sid.lstrip(".") else None
    return parent if isinstance(parent, str) and parent and parent != sid else None


def upgrade(value: Any, row: Mapping[str, Any]) -> Any:
    """A stored summary of the version before ``parent`` brought to this version from its ledger
    ``row`` (nothing else changed between them); any other value is returned as it is."""
    if isinstance(value, dict) and value.get("version") == _NO_PARENT_VERSION:
        value = dict(value, parent=parent_of(row), version=SUMMARY_VERSION)
        # The fields in the order a summary of this version gives them (its JSON is compared whole).
        value["version"] = value.pop("version")
    return value


def reason_seqs(row: Mapping[str, Any]) -> dict[str, list[int]]:
    """Each flag reason of a ledger row with the seqs behind it (the ``seqs`` object; older rows' three columns).

    The three reasons of :data:`~rematch_trace.trace.reasons.REASONS` are always there, empty when absent.
    """
    seqs = row.get("seqs")
    if not isinstance(seqs, Mapping):
        seqs = {"redirect": row.get("redirect_seqs"), "error_cluster": row.get("error_cluster_seqs"),
                "mark": row.get("mark_seqs")}
    out: dict[str, list[int]] = {r: [] for r in REASONS}
    for reason, values in seqs.items():
        if isinstance(reason, str) and isinstance(values, list):
            out[reason] = [v for v in values if type(v) is int]
    return out


def folder_prices_key(data: DataDir) -> str | None:
    """:func:`source_key` of the prices ``load(data.root)`` would read (the shipped table, then the data
    folder's ``prices.yml``), without parsing them; ``None`` when a file cannot be read."""
    from rematch_trace.report.prices import shipped_text

    try:
        texts = [shipped_text()]
        user = data.root / "prices.yml"
        if user.exists():
            texts.append(user.read_text("utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    return source_key(texts)


def _stat(path: str) -> list[int]:
    try:
        st = os.stat(path)
    except OSError:
        return [-1, -1]
    return [st.st_size, st.st_mtime_ns]


def basis(trace: str, events: str, prices_key: str) -> list[Any]:
    """What a stored summary was made from: its files' size and mtime and the prices' :func:`source_key`."""
    return [*_stat(trace), *_stat(events), prices_key]


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
            for harness, session_id, trace_path, held in list(ledger.summary_bases()):
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
            from rematch_trace.report.collect import key_of
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
