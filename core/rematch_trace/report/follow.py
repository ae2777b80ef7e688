"""What follows a session's outputs once they are written: its stored summary and the search index."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rematch_trace.store.datafolder import DataDir

if TYPE_CHECKING:
    from rematch_trace.store.search_handover import HandedRows


def follow_outputs(data: DataDir, only: set[str] | None = None, jobs: int = 1,
                   handed: HandedRows | None = None) -> None:
    """Bring the ledger's stored summaries (report/stored.py) and the search index
    (store/search_index.py) up to date with the traces (``only``: just these trace keys).

    Each reads only what changed since it last ran; neither failing stops the writer that
    calls this (a reading command makes what is missing itself). ``jobs``: worker processes
    reading the source transcripts for the index (the import's ``--jobs``); ``handed``: the index rows
    the import's workers read with the sources (those are not read again).
    """
    import sqlite3

    from rematch_trace.report.stored import store_summaries
    from rematch_trace.store.search_index import sync_data

    def index(d: DataDir, o: set[str] | None) -> None:
        sync_data(d, o, jobs, handed)

    for step in (store_summaries, index):
        try:
            step(data, only)
        except (OSError, sqlite3.Error, ValueError):
            continue  # the outputs are written and recorded; what this would keep is made when read
