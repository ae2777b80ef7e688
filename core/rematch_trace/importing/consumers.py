"""The consumers of the trace an import writes, made where the trace is written (the worker).

A session's trace lines feed, as they are written (``source_import._Out``), the search index's rows
(:class:`~rematch_trace.store.search_rows.TraceRows`) and its stored summary
(:class:`~rematch_trace.report.summary.SummaryFold`); what they make crosses to the one writer with the
file's outcome, ready to insert. This module makes the summary's: the price table (once per process and
data folder) and the stored summary's JSON once the session's ledger row is known.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from rematch_trace.store.datafolder import DataDir

if TYPE_CHECKING:
    from rematch_trace.report.prices import PriceTable
    from rematch_trace.report.summary import SummaryFold

#: Data folder root -> (its ``prices.yml``'s size and mtime, or ``None``; the table, or ``None`` if it failed).
_PRICES: dict[str, tuple[tuple[int, int] | None, PriceTable | None]] = {}


def _prices(data: DataDir) -> PriceTable | None:
    # The shipped table cannot change under a running process; the folder's own file is checked by its
    # stat (not read and digested for every session, as a stored summary's basis check does).
    try:
        st = os.stat(data.root / "prices.yml")
        key: tuple[int, int] | None = (st.st_size, st.st_mtime_ns)
    except OSError:
        key = None
    got = _PRICES.get(str(data.root))
    if got is not None and got[0] == key:
        return got[1]
    from rematch_trace.report.prices import PriceError, load

    try:
        table: PriceTable | None = load(data.root)
    except PriceError:
        table = None  # no stored summary: `rematch stats` says why
    _PRICES[str(data.root)] = (key, table)
    return table


def summary_fold(data: DataDir) -> SummaryFold | None:
    """A fold for one session's summary at the data folder's prices, or ``None`` (they cannot be loaded)."""
    from rematch_trace.report.summary import SummaryFold

    prices = _prices(data)
    return SummaryFold(prices) if prices is not None else None


def resumed_fold(data: DataDir, state: dict[str, Any]) -> SummaryFold | None:
    """A fold continued from its saved ``state``, or ``None`` when it cannot be (another version, other
    prices: the worker then folds the committed trace whole)."""
    from rematch_trace.report.summary import SummaryFold

    prices = _prices(data)
    return SummaryFold.resume(prices, state) if prices is not None else None


def stored_summary(data: DataDir, fold: SummaryFold, key: str, row: Mapping[str, Any]) -> str:
    """The ledger's ``summary`` column for a session whose trace ``key`` was folded whole into ``fold``
    (committed: its files' sizes and times are the basis), as report/stored.py would make it."""
    from rematch_trace.report.stored import basis
    from rematch_trace.report.summary import to_json

    b = basis(os.path.join(data.traces, f"{key}.jsonl"), os.path.join(data.events, f"{key}.jsonl"),
              fold.prices.source)
    return orjson.dumps({"basis": b, "summary": to_json(fold.result(key, row))}).decode()
