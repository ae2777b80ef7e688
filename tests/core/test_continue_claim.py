"""A grown file keeps the claim of its first import: continuing it does not ask the plugins again."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

import rematch_toy
from rematch_trace.host.hookspecs import hookimpl
from rematch_trace.host.source import Source
from rematch_trace.importing.batch import ImportSettings, run_import
from rematch_trace.importing.worker import kept_source, use_host
from rematch_trace.store.datafolder import DataDir
from rematch_trace.store.ledger import Ledger
from rematch_trace.store.states import Detected, load_saved
from rematch_trace.testing import make_host

OPTS = ImportSettings(events=True, redact=True, jobs=1)


class CountDetect:
    """A wrapper around every plugin's ``detect_source``: counts the files asked about."""

    __name__ = "count_detect"

    def __init__(self) -> None:
        self.asked: list[str] = []

    @hookimpl(wrapper=True)
    def detect_source(self, path: Path) -> Any:
        self.asked.append(path.name)
        return (yield)


def toy(sid: str, start: int, n: int) -> bytes:
    out = [orjson.dumps({"toy": 1, "session": sid, "cwd": "/tmp"})] if start == 0 else []
    for i in range(start, start + n):
        out.append(orjson.dumps({"t": 1000 + i, "user": f"step {i}: please do the thing number {i}, carefully"}))
        out.append(orjson.dumps({"t": 1001 + i, "model": "m", "say": f"ok {i}",
                                 "calls": [{"id": f"c{i}", "tool": "sh", "args": {"cmd": f"echo {i}"}}]}))
        out.append(orjson.dumps({"t": 1002 + i, "result": f"c{i}", "output": f"{i}\n", "error": False}))
    return b"\n".join(out) + b"\n"


@pytest.fixture
def counted():  # type: ignore[no-untyped-def]
    counter = CountDetect()
    host = make_host([rematch_toy, counter])
    yield host, counter
    use_host(None)


def _grow(src: Path, more: bytes) -> None:
    with open(src, "ab") as f:
        f.write(more)


def test_a_grown_file_is_continued_without_detecting_it_again(tmp_path: Path, counted) -> None:  # type: ignore[no-untyped-def]
    host, counter = counted
    src = tmp_path / "src" / "long.jsonl"
    src.parent.mkdir()
    src.write_bytes(toy("long", 0, 40))  # past the 4 KiB head detection reads
    os.utime(src, (time.time() - 100, time.time() - 100))
    out = tmp_path / "out"
    run_import([src.parent], DataDir(out), OPTS, host=host)
    assert counter.asked == ["long.jsonl"]
    with Ledger(out / "ledger.sqlite") as ledger:
        saved = load_saved(ledger.saved_of(str(src)) or b"")
    assert saved.detected == Detected(hint=None, plugin="rematch_toy", agent_kind="main")

    _grow(src, toy("long", 40, 3))
    summary = run_import([src.parent], DataDir(out), OPTS, host=host)
    assert [f.outcome for f in summary.files] == ["resumed"]
    assert counter.asked == ["long.jsonl"]  # not asked again

    # The same bytes as reading the grown file whole.
    whole = tmp_path / "whole"
    run_import([src], DataDir(whole), OPTS, host=host)
    for folder in ("traces", "events", "pending"):
        mine = {p.name: p.read_bytes() for p in (out / folder).iterdir()}
        assert mine == {p.name: p.read_bytes() for p in (whole / folder).iterdir()}, folder


def test_a_file_whose_head_was_not_all_read_is_detected_again(tmp_path: Path, counted) -> None:  # type: ignore[no-untyped-def]
    host, counter = counted
    src = tmp_path / "src" / "short.jsonl"
    src.parent.mkdir()
    src.write_bytes(toy("short", 0, 2))  # under 4 KiB: detection saw less than it sees now
    os.utime(src, (time.time() - 100, time.time() - 100))
    out = tmp_path / "out"
    run_import([src.parent], DataDir(out), OPTS, host=host)
    _grow(src, toy("short", 2, 40))
    summary = run_import([src.parent], DataDir(out), OPTS, host=host)
    assert [f.outcome for f in summary.files] == ["resumed"]
    assert counter.asked == ["short.jsonl", "short.jsonl"]


def test_the_kept_claim_is_used_only_while_what_detection_saw_holds(tmp_path: Path) -> None:
    host = make_host([rematch_toy])
    try:
        path = tmp_path / "a.jsonl"
        detected = Detected(hint=None, plugin="rematch_toy", agent_kind="sub", parent="/p/parent.jsonl")
        saved = load_saved(orjson.dumps({"offset": 9000, "harness": "toy", "head_skip": 0,
                                         "detected": {"hint": None, "plugin": "rematch_toy", "agent_kind": "sub",
                                                      "compression": "", "parent": "/p/parent.jsonl"}}))
        assert saved.detected == detected
        kept = kept_source(host, saved, path, None, 9000)
        assert kept == Source("toy", path, agent_kind="sub", parent=Path("/p/parent.jsonl"))
        assert kept is not None and kept.plugin == "rematch_toy"
        assert kept_source(host, saved, path, "toy", 9000) is None  # found with another hint
        assert kept_source(host, saved, path, None, 4000) is None  # the head was not all imported
        saved.detected = Detected(hint=None, plugin="gone_plugin")
        assert kept_source(host, saved, path, None, 9000) is None  # its plugin is not loaded
        saved.detected = Detected(hint=None, plugin="rematch_toy", compression="gz")
        assert kept_source(host, saved, path, None, 9000) is None  # compressed: detected again
        saved.detected = None
        assert kept_source(host, saved, path, None, 9000) is None  # a state from before the claim was kept
    finally:
        use_host(None)
