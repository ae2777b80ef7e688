"""The line reader: bounded memory, one problem per bad line, the rest still read."""

from __future__ import annotations

import io
from pathlib import Path

import orjson

from rematch_trace.host.source import Problem, RawRecord
from rematch_trace.importing import reader as jsonl
from rematch_trace.importing.reader import read_jsonl


def read(data: bytes, **kw: object) -> list[RawRecord | Problem]:
    return list(read_jsonl(io.BufferedReader(io.BytesIO(data)), "f.jsonl", **kw))  # type: ignore[arg-type]


def values(items: list[RawRecord | Problem]) -> list[object]:
    return [i.value for i in items if isinstance(i, RawRecord)]


def problems(items: list[RawRecord | Problem]) -> list[tuple[int, str]]:
    return [(i.line, i.kind) for i in items if isinstance(i, Problem)]


def test_offsets_and_lines() -> None:
    data = b'{"a":1}\n\n{"b":2}\n'
    items = read(data)
    assert [(r.line, r.offset, r.end) for r in items if isinstance(r, RawRecord)] == [(1, 0, 8), (3, 9, 17)]


def test_bad_lines_reported_rest_read() -> None:
    data = b'{"a":1}\nnot json\n[1,2]\n"s"\n{"b":\xff}\n{"c":3}\n'
    items = read(data)
    assert values(items) == [{"a": 1}, {"c": 3}]
    assert problems(items) == [(2, "malformed"), (3, "malformed"), (4, "malformed"), (5, "malformed")]
    assert "not a JSON object (list)" in str(items[2])
    assert str(items[1]).startswith("f.jsonl:2: invalid JSON")


def test_bom_crlf_surrogates_nul_duplicates() -> None:
    data = b'\xef\xbb\xbf{"a":1}\r\n{"s":"\\ud800x"}\n{"n":"\x00"}\n{"k":1,"k":2}\n'
    items = read(data)
    assert values(items) == [{"a": 1}, {"s": "\ud800x"}, {"k": 2}]
    assert problems(items) == [(3, "malformed")]


def test_truncated_tail_not_consumed() -> None:
    data = b'{"a":1}\n{"b":'
    items = read(data)
    assert values(items) == [{"a": 1}]
    assert problems(items) == [(2, "truncated_tail")]
    complete_without_newline = read(b'{"a":1}\n{"b":2}')
    assert values(complete_without_newline) == [{"a": 1}, {"b": 2}]


def test_deep_nesting_is_a_problem_not_a_crash() -> None:
    deep = b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    items = read(deep + b'{"ok":1}\n')
    assert values(items) == [{"ok": 1}]
    assert problems(items) == [(1, "malformed")]


def test_big_line_parsed_by_ijson(monkeypatch: object) -> None:
    jsonl.BIG_LINE = 1024  # type: ignore[misc]
    try:
        big = {"type": "user", "text": "x" * 5000, "n": [1, 2.5]}
        data = b'{"a":1}\n' + orjson.dumps(big) + b'\n{"z":0}\n'
        items = read(data)
        assert values(items) == [{"a": 1}, big, {"z": 0}]
        recs = [i for i in items if isinstance(i, RawRecord)]
        assert recs[1].offset == 8 and recs[2].offset == recs[1].end
        bad = b'{"a":' + b"1" * 3000 + b",}\n" + b'{"z":0}\n'
        assert values(read(bad)) == [{"z": 0}]
    finally:
        jsonl.BIG_LINE = 4 * 1024 * 1024  # type: ignore[misc]


def test_oversized_line_skipped_without_holding_it() -> None:
    jsonl.BIG_LINE = 1024  # type: ignore[misc]
    try:
        data = b'{"a":1}\n{"big":"' + b"y" * 50_000 + b'"}\n{"c":3}\n'
        items = read(data, max_line=10_000)
        assert values(items) == [{"a": 1}, {"c": 3}]
        assert problems(items) == [(2, "oversized")]
        assert "limit" in str(next(i for i in items if isinstance(i, Problem)))
        recs = [i for i in items if isinstance(i, RawRecord)]
        assert recs[1].offset == len(data) - len(b'{"c":3}\n')
    finally:
        jsonl.BIG_LINE = 4 * 1024 * 1024  # type: ignore[misc]


def test_resume_from_offset(tmp_path: Path) -> None:
    p = tmp_path / "f.jsonl"
    p.write_bytes(b'{"a":1}\n{"b":2}\n')
    with open(p, "rb") as f:
        f.seek(8)
        assert values(list(read_jsonl(f, str(p), 8))) == [{"b": 2}]


def test_requires_c_backend(monkeypatch: object) -> None:
    import ijson
    import pytest

    from rematch_trace.errors import RematchError

    jsonl.require_c_backend()
    mp = pytest.MonkeyPatch()
    mp.setattr(ijson, "backend", "python")
    try:
        with pytest.raises(RematchError, match="yajl2_c"):
            jsonl.require_c_backend()
    finally:
        mp.undo()


def test_zstd_stream_reports_a_cut_frame() -> None:
    import pytest
    import zstandard

    from rematch_trace.importing.streams import DamagedStream, open_zstd

    body = b"".join(orjson.dumps({"n": i}) + b"\n" for i in range(2000))
    two_frames = zstandard.ZstdCompressor().compress(body[:9000]) + zstandard.ZstdCompressor().compress(body[9000:])
    assert open_zstd(io.BytesIO(two_frames)).read() == body
    f = open_zstd(io.BytesIO(two_frames[:-7]))
    with pytest.raises(DamagedStream, match="cut off"):
        f.read()
    with pytest.raises(DamagedStream, match=r"corrupt|cut off"):
        open_zstd(io.BytesIO(two_frames[:4] + b"\x00" * 64)).read()
