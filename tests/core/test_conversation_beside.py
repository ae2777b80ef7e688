"""The conversation items' index rows are made as the import reads the source (importing/search_sources.py,
``ConversationRows``): the same rows whether the plugin's ``conversation_items`` takes the records one by one
or runs ahead of the translation; a reading error the items meet first fails the import as the translation
would; the items failing on their own cost the rows alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

import rematch_toy
from rematch_trace import hookimpl
from rematch_trace.host.conversation import Said
from rematch_trace.host.facade import PluginFailure
from rematch_trace.host.source import RawRecord, Source
from rematch_trace.importing.source_import import import_source
from rematch_trace.store.datafolder import DataDir
from rematch_trace.testing import make_host

LINES = [{"toy": 1, "session": "s-1", "cwd": "/tmp"}] + [
    rec for n in range(6) for rec in (
        {"t": 1000 * n + 1, "user": f"question {n}"},
        {"t": 1000 * n + 2, "model": "m", "say": f"answer {n} about wobblegongs", "stop": "end"},
    )
]


class _Toy:
    """The toy plugin, with conversation items that take the records lazily or all at once first, and a
    reading that fails after ``fail_after`` records."""

    def __init__(self, greedy: bool, fail_after: int | None = None, items_fail: bool = False) -> None:
        self.greedy = greedy
        self.fail_after = fail_after
        self.items_fail = items_fail

    @hookimpl
    def detect_source(self, path: Path, head: bytes) -> Source | None:
        return rematch_toy.detect_source(path, head)

    @hookimpl
    def read_transcript(self, source: Source, start: int) -> Iterator[Any]:
        for n, item in enumerate(rematch_toy.read_transcript(source, start)):
            if self.fail_after is not None and n == self.fail_after:
                raise OSError("the disk went away")
            yield item

    @hookimpl
    def to_trace_records(self, source: Source, records: Iterator[RawRecord], state: dict[str, Any]) -> Any:
        return rematch_toy.to_trace_records(source, records, state)

    @hookimpl
    def conversation_items(self, source: Source, records: Iterator[RawRecord]) -> Iterator[Any]:
        taken = list(records) if self.greedy else records
        for rec in taken:
            if self.items_fail and "model" in rec.value:
                raise ValueError("the plugin's own bug")
            if "say" in rec.value:
                yield Said("", rec.value["t"], "assistant", rec.value["say"])


def _import(tmp_path: Path, plugin: _Toy, name: str) -> Any:
    src = tmp_path / f"{name}.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in LINES))
    host = make_host([plugin])
    source = host.detect(src, None)
    assert source is not None
    data = DataDir(tmp_path / name)
    data.ensure()
    return import_source(host, source, data, keep_records=True)


def test_the_rows_do_not_depend_on_how_the_items_take_the_records(tmp_path: Path) -> None:
    lazy = _import(tmp_path, _Toy(greedy=False), "lazy").said
    greedy = _import(tmp_path, _Toy(greedy=True), "greedy").said
    assert lazy is not None and greedy is not None
    assert lazy == greedy
    assert [r[4] for r in lazy[2]] == [f"answer {n} about wobblegongs" for n in range(6)]
    assert lazy[3] is False  # not failed


def test_a_reading_error_the_items_meet_first_fails_the_import(tmp_path: Path) -> None:
    with pytest.raises(PluginFailure, match="read_transcript: OSError: the disk went away"):
        _import(tmp_path, _Toy(greedy=True, fail_after=5), "broken")
    assert not list((tmp_path / "broken" / "traces").glob("*.jsonl"))  # nothing half written


def test_the_items_failing_cost_the_rows_alone(tmp_path: Path) -> None:
    result = _import(tmp_path, _Toy(greedy=False, items_fail=True), "buggy")
    assert result.said is not None and result.said[3] is True  # failed: the index reads the source itself
    assert [s.session_id for s in result.sessions] == ["s-1"]
    assert result.sessions[0].counts["input"] == 6
