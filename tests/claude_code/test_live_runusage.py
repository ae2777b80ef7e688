"""The run's usage at a Stop: read backwards from the transcript's end, bounded."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

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


def _long_line_file(path: Path, line_bytes: int) -> Path:
    """A prompt, a response with usage, a tool output line of ``line_bytes``, a last response (written piecewise)."""
    with path.open("wb") as f:
        f.write(orjson.dumps({"type": "user", "message": {"role": "user", "content": "go"}}) + b"\n")
        f.write(orjson.dumps({"type": "assistant", "message": {"id": "m1", "usage": {"output_tokens": 3}}}) + b"\n")
        f.write(b'{"type":"user","message":{"content":[{"type":"tool_result","content":"')
        piece = b"x" * (1 << 20)
        for _ in range(line_bytes >> 20):
            f.write(piece)
        f.write(b'"}]}}\n')
        f.write(orjson.dumps({"type": "assistant", "message": {"id": "m2", "usage": {"output_tokens": 4}}}) + b"\n")
    return path


def _linear_pass(path: Path) -> None:
    """The baseline: every byte of the file read once, backwards, in the reader's steps."""
    fd = os.open(path, os.O_RDONLY)
    try:
        pos = os.fstat(fd).st_size
        while pos > 0:
            step = min(runusage.CHUNK_BYTES, pos)
            pos -= step
            os.pread(fd, step, pos).rfind(b"\n")
    finally:
        os.close(fd)


def test_a_40_mb_line_costs_a_linear_pass_and_bounded_memory(tmp_path: Path) -> None:
    """Reading back past a 40 MB tool output line at Stop: time within a small factor of one linear
    pass over the file (measured here, not an absolute figure), memory within the line bound."""
    import time
    import tracemalloc

    path = _long_line_file(tmp_path / "t.jsonl", 40 << 20)
    usage = runusage.run_usage(str(path))
    assert usage is not None and usage.output == 7  # both responses, the long line passed over

    def best(fn: Any) -> float:
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times)

    linear = best(lambda: _linear_pass(path))
    took = best(lambda: runusage.run_usage(str(path)))
    # Quadratic reading (each step copying the line read so far) is over 100 times the linear pass.
    assert took < 25 * linear + 0.05, (took, linear)
    tracemalloc.start()
    try:
        runusage.run_usage(str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < runusage.MAX_LINE_BYTES + 4 * runusage.CHUNK_BYTES, peak
