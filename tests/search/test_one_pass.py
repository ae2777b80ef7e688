"""One read, many outputs (issue 40): the search index's trace rows and the stored summaries are made by the
import's worker as it writes each trace, not by reading the traces back after the import; a grown file's
summary continues from its saved fold. The index and the summaries are the ones a reading of the traces makes.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_search import CORPUS_FILES, _grow_claude
from test_search_handover import index_rows, rebuilt


def _import(src: Path, data: Path) -> None:
    import rematch_claude_code
    from rematch_trace.importing.batch import run_import
    from rematch_trace.importing.settings import ImportSettings
    from rematch_trace.importing.worker import use_host
    from rematch_trace.store.datafolder import DataDir
    from rematch_trace.testing import make_host

    try:
        summary = run_import([src], DataDir(data), ImportSettings(jobs=1), host=make_host([rematch_claude_code]))
    finally:
        use_host(None)
    assert summary.files == [] or all(f.outcome in ("imported", "resumed") for f in summary.files)


def _stored(data: Path) -> dict[str, Any]:
    with sqlite3.connect(data / "ledger.sqlite") as db:
        return {sid: orjson.loads(s) for sid, s in db.execute("SELECT session_id, summary FROM sessions")}


def _summaries_from_traces(data: Path) -> dict[str, Any]:
    """Each session's summary as report/stored.py makes it, reading its trace."""
    from rematch_trace.report.collect import key_of
    from rematch_trace.report.prices import load
    from rematch_trace.report.summary import summarize, to_json
    from rematch_trace.store.ledger import Ledger

    prices = load(data)
    out = {}
    with Ledger(data / "ledger.sqlite", readonly=True) as ledger:
        for row in ledger.sessions():
            key = key_of(row)
            assert key is not None
            out[row["session_id"]] = to_json(summarize(key, row, data / "traces" / f"{key}.jsonl", prices))
    return out


def test_the_index_and_summaries_are_made_as_the_traces_are_written(
        corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rematch_trace.importing import search_sources
    from rematch_trace.report import consumers
    from rematch_trace.report import summary as summary_mod
    from rematch_trace.store.search_index import SearchIndex

    src = tmp_path / "src"
    copy = src / CORPUS_FILES["claude_code"]
    copy.parent.mkdir(parents=True)
    shutil.copyfile(corpus_dir / CORPUS_FILES["claude_code"], copy)
    monkeypatch.setattr(search_sources, "_HOST", [])
    monkeypatch.setattr(consumers, "_PRICES", {})
    read: list[str] = []
    real_read = SearchIndex._read
    monkeypatch.setattr(SearchIndex, "_read", lambda self, key, *a, **k: (read.append(key), real_read(self, key, *a, **k))[1])
    folds: list[Path] = []
    real_records = summary_mod.trace_records
    monkeypatch.setattr(summary_mod, "trace_records", lambda p: (folds.append(p), real_records(p))[1])
    data = tmp_path / "data"

    _import(src, data)
    assert read == []  # no trace read back by the index
    assert folds == []  # nor by the stored summaries
    stored = _stored(data)
    assert stored and all(s is not None for s in stored.values())
    assert {sid: s["summary"] for sid, s in stored.items()} == _summaries_from_traces(data)
    assert index_rows(data) == rebuilt(data, tmp_path / "rebuilt")

    # Grown: the summary continues from the fold saved with the state (no trace read whole), and is the one
    # the whole trace gives.
    _grow_claude(copy, "harmonica")
    folds.clear()
    _import(src, data)
    assert folds == []
    stored = _stored(data)
    assert {sid: s["summary"] for sid, s in stored.items()} == _summaries_from_traces(data)
    # (continued: the new rows come after the old ones, where a rebuild numbers them in order)
    got, anew = index_rows(data), rebuilt(data, tmp_path / "rebuilt2")
    assert got["sources"] == anew["sources"] and got["traces"] == anew["traces"]
    assert sorted(r[1:] for r in got["text"]) == sorted(r[1:] for r in anew["text"])


def test_a_fold_state_of_other_prices_is_not_continued() -> None:
    from rematch_trace.report.prices import load
    from rematch_trace.report.summary import SummaryFold

    prices = load()
    fold = SummaryFold(prices)
    fold.feed({"seq": 0, "t": 1_700_000_000_000, "ev": "input", "text": "hi"})
    state = orjson.loads(orjson.dumps(fold.state()))
    again = SummaryFold.resume(prices, state)
    assert again is not None and again.state() == fold.state()
    assert SummaryFold.resume(prices, {**state, "prices": "other"}) is None
    assert SummaryFold.resume(prices, {**state, "version": -1}) is None
    assert SummaryFold.resume(prices, {**state, "usage": [["x"]]}) is None
