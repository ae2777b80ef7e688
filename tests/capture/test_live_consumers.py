"""Live capture feeds the trace's registered consumers as it writes (report/consumers.py), as the import does:
the stored summary is folded across the hooks' writers from the states kept in the live state, never by
reading the trace back, and the index holds what a reading of the whole trace gives."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from capture_helpers import load_fixture

import rematch_claude_code
from rematch_trace.live.capture import capture_event
from rematch_trace.store.datafolder import DataDir
from rematch_trace.testing import make_host

SID = "7c1e2a4b-5d6f-4a8b-9c0d-1e2f3a4b5c6d"
T0 = 1_790_000_000_000


def _index(db_path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db_path) as db:
        return db.execute("SELECT s.key, s.off, s.len, s.digest, x.kind, x.seq, x.t, x.body FROM spans s "
                          "JOIN text x ON x.rowid = s.id WHERE s.src IS NULL ORDER BY s.key, s.off").fetchall()


def test_a_live_session_feeds_the_registered_consumers(tmp_path: Path, project: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from rematch_trace.report import summary as summary_mod
    from rematch_trace.report.prices import load
    from rematch_trace.report.summary import summarize, to_json
    from rematch_trace.store.ledger import Ledger
    from rematch_trace.store.search_index import sync_data

    hooks, _text = load_fixture(project, tmp_path / "absent-transcript.jsonl")
    data = DataDir(tmp_path / "data")
    host = make_host([rematch_claude_code])
    folds: list[Path] = []
    real_records = summary_mod.trace_records
    monkeypatch.setattr(summary_mod, "trace_records", lambda p: (folds.append(p), real_records(p))[1])
    for i, payload in enumerate(hooks):
        capture_event(host, data, "claude_code", payload, T0 + 1000 * i)  # a writer loaded from its state each time
    assert folds == []  # the summary was folded as the lines were written, across the writers
    state = orjson.loads((data.root / "live" / f"{SID}.json").read_bytes())
    assert state["consumers"]["summary"]["counts"][0] >= 1  # the fold's state kept beside the lengths

    monkeypatch.setattr(summary_mod, "trace_records", real_records)
    with Ledger(data.ledger, readonly=True) as ledger:
        rows = ledger.sessions()
    assert [r["session_id"] for r in rows] == [SID]
    stored = orjson.loads(rows[0].pop("summary"))
    key = data.trace_path(SID).name[:-6]
    assert stored["summary"] == to_json(summarize(key, rows[0], data.trace_path(SID), load(data.root)))

    # The index holds what a sync reading the whole trace makes of it.
    got = _index(data.root / "search.sqlite")
    assert any(r[4] == "prompt" for r in got)
    (data.root / "search.sqlite").unlink()
    sync_data(data)
    assert _index(data.root / "search.sqlite") == got
