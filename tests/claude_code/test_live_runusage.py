"""The run's usage at a Stop: read backwards from the transcript's end, bounded."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from rematch_claude_code import runusage


def _line(typ: str, **fields: object) -> bytes:
    return orjson.dumps({"type": typ, **fields}) + b"\n"


def _assistant(mid: str, out: int, inp: int = 10) -> bytes:
    return _line("assistant", message={"id": mid, "role": "assistant", "content": [{"type": "text", "text": "x"}],
                                       "usage": {"input_tokens": inp, "output_tokens": out,
                                                 "cache_read_input_tokens": 5, "cache_creation_input_tokens": 1}})


def test_lines_come_last_first_and_an_over_long_line_is_passed_over(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runusage, "CHUNK_BYTES", 7)
    monkeypatch.setattr(runusage, "MAX_LINE_BYTES", 20)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"first\n" + b"L" * 100 + b"\nmiddle line\n\nlast")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert list(runusage.lines_backward(fd, os.fstat(fd).st_size)) == [b"last", b"middle line", b"first"]
        # A window cut by the limit does not yield its first, partial line.
        assert list(runusage.lines_backward(fd, os.fstat(fd).st_size, limit=15)) == [b"last"]
    finally:
        os.close(fd)


def test_the_run_usage_stops_at_its_prompt_and_counts_each_response_once(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    earlier_run = _line("user", message={"role": "user", "content": "first prompt"}) + _assistant("m0", 999)
    run = (
        _line("user", message={"role": "user", "content": [{"type": "text", "text": "second prompt"}]})
        + _assistant("m1", 1) + _assistant("m1", 30)  # streamed: the placeholder, then the final count
        + _line("user", message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                                               "content": "ok"}]})
        + _line("user", isMeta=True, message={"role": "user", "content": "meta text"})
        + _line("user", isCompactSummary=True, message={"role": "user", "content": "This session is being continued"})
        + _assistant("m2", 7)
        + _line("assistant", isSidechain=True, message={"id": "side", "usage": {"output_tokens": 500}})
    )
    path.write_bytes(earlier_run + run)
    usage = runusage.run_usage(str(path))
    assert usage is not None
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write, usage.total) == (20, 37, 10, 2, 69)
    assert runusage.run_usage(str(tmp_path / "absent.jsonl")) is None
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert runusage.run_usage(str(fifo)) is None  # never blocks on a FIFO
