"""The line reader: bounded memory, one problem per bad line, the rest still read."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest

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


def test_big_line_parsed_by_ijson(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonl, "WHOLE_LINE", 1024)
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


@pytest.mark.parametrize("whole", [1024, 64 * 1024 * 1024])
def test_oversized_line_skipped(monkeypatch: pytest.MonkeyPatch, whole: int) -> None:
    # Streamed (a raised limit past WHOLE_LINE) or read up to the limit and drained: skipped either way.
    monkeypatch.setattr(jsonl, "WHOLE_LINE", whole)
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


def _long(text_len: int, extra: str = "") -> bytes:
    return b'{"type":"user","text":"' + b"x" * text_len + b'"' + extra.encode() + b"}"


#: Long lines of every shape the whole read and the stream must agree on (BIG_LINE patched to 64).
_LONG_CASES = {
    "valid": b'{"a":1}\n' + _long(500) + b'\n{"z":0}\n',
    "crlf": _long(500) + b"\r\n" + b'{"z":0}\n',
    "inexact number": _long(500, ',"n":0.10000000000000001,"k":18446744073709551617') + b"\n",
    "spaced": b'{ "pad" : "' + b"y" * 400 + b'" , "n" : 1e400 }\n{"z":0}\n',
    "invalid": _long(500)[:-1] + b",}\n" + b'{"z":0}\n',
    "not an object": b"[" + b"1," * 300 + b"2]\n" + b'{"z":0}\n',
    "last, no newline": b'{"a":1}\n' + _long(500),
    "torn last line": b'{"a":1}\n' + _long(500)[:-5],
}


def _shape(items: list[RawRecord | Problem]) -> list[object]:
    # Problems by place and kind: the oversized message writes the limit in MiB per path.
    return [tuple(i) if isinstance(i, RawRecord) else (i.line, i.kind) for i in items]


@pytest.mark.parametrize("case", sorted(_LONG_CASES))
@pytest.mark.parametrize("limit", [300, 527, 528, 529, 2000])
def test_a_long_line_read_whole_gives_what_the_stream_gives(
    monkeypatch: pytest.MonkeyPatch, case: str, limit: int
) -> None:
    """Lines past BIG_LINE up to the limit are read whole; the result is the ijson stream's, record for record."""
    data = _LONG_CASES[case]
    monkeypatch.setattr(jsonl, "BIG_LINE", 64)
    monkeypatch.setattr(jsonl, "WHOLE_LINE", 64)  # whole == BIG_LINE: the streaming path
    streamed = read(data, max_line=limit)
    for whole in (200, 527, 10_000):  # under the line (stream the rest), at it, past it
        monkeypatch.setattr(jsonl, "WHOLE_LINE", whole)
        assert _shape(read(data, max_line=limit)) == _shape(streamed), (case, limit, whole)


def test_a_long_line_read_whole_keeps_a_lone_surrogate_as_a_short_line_does(monkeypatch: pytest.MonkeyPatch) -> None:
    # ijson's yajl reads the escape as "?"; read whole, a long line is parsed as every short one is
    # (the lone surrogate kept, for the plugins' clean() to replace it with U+FFFD).
    data = b'{"t":"\\ud800' + b"x" * 400 + b'"}\n'
    short = read(data)
    monkeypatch.setattr(jsonl, "BIG_LINE", 64)
    assert _shape(read(data)) == _shape(short) == [(1, 0, len(data), {"t": "\ud800" + "x" * 400})]


def test_an_oversized_long_line_is_not_joined_and_the_next_line_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # A line of exactly limit + 1 bytes (its newline included) is over; the line after it is read.
    monkeypatch.setattr(jsonl, "BIG_LINE", 64)
    line = _long(500) + b"\n"
    items = read(line + b'{"z":0}\n', max_line=len(line) - 1)
    assert problems(items) == [(1, "oversized")]
    assert [tuple(i) for i in items if isinstance(i, RawRecord)] == [(2, len(line), len(line) + 8, {"z": 0})]
