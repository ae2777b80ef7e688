"""The export's parts in process: hostile traces and parent chains, the key, which spans a rerun sends."""

from __future__ import annotations

import os
from pathlib import Path

import attrs
import orjson
import pytest

from rematch_trace.export.keys import Ids, load_key
from rematch_trace.export.run import _to_send, families
from rematch_trace.export.spans import LINE_DIGEST, ROOT, SessionInfo, build, changed, part_span_id

IDS = Ids(b"k" * 32)


def rec(seq: int, t: int, ev: str, **fields: object) -> bytes:
    return orjson.dumps({"seq": seq, "t": t, "ev": ev, **fields}) + b"\n"


def trace(tmp_path: Path, lines: list[bytes], name: str = "s") -> SessionInfo:
    path = tmp_path / f"{name}.jsonl"
    path.write_bytes(b"".join(lines))
    return SessionInfo(harness="omp", session_id=name, trace=path)


START = rec(0, 1000, "session_start", session_id="s", cwd="/home/alice/acme", agent={"kind": "main", "name": "omp"},
            model={"provider": "anthropic", "id": "m"}, repo_remote="https://bob:tok@github.com/acme/api.git")


def test_a_hostile_trace_loses_only_its_bad_lines(tmp_path: Path) -> None:
    info = trace(tmp_path, [
        START, b"{not json\n", b"[1, 2]\n",
        rec(3, "soon", "turn_end", model="nope", usage={"input": "many", "output": True}),  # type: ignore[arg-type]
        rec(4, 2000, "tool_result", tool=None, call_id=7, is_error=True, error_class=None),
        rec(5, 3000, "turn_end", model={"id": "m"}, usage={"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4}),
        b'{"seq": 6, "t": 4000, "ev": "turn_end"',  # cut off: a live writer mid-line
    ])
    built = build(info, IDS, 1, None)
    names = [s.name for s in built.spans]
    assert names == ["invoke_agent omp", "chat", "execute_tool unknown", "chat m"]
    assert len(built.lines) == 6 * LINE_DIGEST  # the cut line is not counted: the next run reads it whole
    tool = built.spans[2]
    assert tool.error == "tool_error" and tool.attributes["error.type"] == "tool_error"
    assert built.spans[3].attributes["gen_ai.usage.input_tokens"] == 8
    root = built.spans[0].attributes
    assert root["rematch.project.remote"] == "github.com/acme/api" and "tok" not in str(root)
    assert root["rematch.project.folder"] == "acme" and "alice" not in str(root)


def test_a_parent_loop_is_cut_and_every_session_is_in_one_family(tmp_path: Path) -> None:
    a = SessionInfo(harness="h", session_id="a", trace=tmp_path / "a", parent="b")
    b = SessionInfo(harness="h", session_id="b", trace=tmp_path / "b", parent="a")
    c = SessionInfo(harness="h", session_id="c", trace=tmp_path / "c", parent="c")
    d = SessionInfo(harness="h", session_id="d", trace=tmp_path / "d", parent="a")
    got = families([a, b, c, d])
    members = [m.session_id for top, kids in got for m in [top, *(k for ks in kids.values() for k in ks)]]
    assert sorted(members) == ["a", "b", "c", "d"]


def test_a_session_span_is_sent_once_when_settled_and_a_grown_session_gets_a_new_one(tmp_path: Path) -> None:
    """No span id twice: the session's span waits for its end; growth after it gets a further span under it."""
    live = [START, rec(1, 1100, "input", text="hi", prelabel="none"), rec(2, 1200, "turn_end", model={"id": "m"}, usage={})]
    hex_id = f"{1:032x}"
    running = build(trace(tmp_path, live), IDS, 1, None)
    assert not running.shut
    todo = _to_send(trace(tmp_path, live), running, IDS, None, hex_id, 10_000)
    assert todo is not None
    spans, acked = todo
    assert [s.seq for s in spans] == [2] and acked.roots == 0  # the response now, the session span held
    assert spans[0].parent_id == running.spans[0].span_id
    assert _to_send(trace(tmp_path, live), running, IDS, acked, hex_id, 10_000) is None  # nothing new, still running
    ended = [*live, rec(3, 1300, "session_shutdown", reasons=[])]
    first = build(trace(tmp_path, ended), IDS, 1, None)
    assert first.shut and first.end_ms == 1300
    assert _to_send(trace(tmp_path, ended), first, IDS, acked, hex_id, 1299) == ([], attrs.evolve(
        acked, size=first.size, digest=first.digest, lines=first.lines))  # ended, but not long enough ago
    # A trace whose own times lie ahead (skewed, or set so by whoever wrote the transcript) settles by its file's.
    future = _to_send(trace(tmp_path, ended), first, IDS, acked, hex_id, 1299, written_ms=1200)
    assert future is not None and [s.seq for s in future[0]] == [ROOT]
    todo = _to_send(trace(tmp_path, ended), first, IDS, acked, hex_id, 1300)
    assert todo is not None
    spans, acked = todo
    assert [s.seq for s in spans] == [ROOT] and spans[0].span_id == first.spans[0].span_id and acked.roots == 1
    assert spans[0].attributes["rematch.turns"] == 1
    assert _to_send(trace(tmp_path, ended), first, IDS, acked, hex_id, 99_999) is None  # sent: never again
    grown = [*ended[:3], rec(3, 1250, "tool_result", tool="bash", call_id="c1", is_error=False),
             rec(4, 1300, "turn_end", model={"id": "m"}, usage={}), rec(5, 1400, "session_shutdown", reasons=[])]
    second = build(trace(tmp_path, grown), IDS, 1, None)
    todo = _to_send(trace(tmp_path, grown), second, IDS, acked, hex_id, 99_999)
    assert todo is not None
    spans, acked = todo
    part = part_span_id(IDS, "s", 1)
    # A second session span (a new id, under the first: its end and counts now), the new call and response
    # under it; the first session span and the unchanged response are not sent again.
    assert [s.seq for s in spans] == [ROOT, 3, 4] and acked.roots == 2
    assert spans[0].span_id == part != first.spans[0].span_id and spans[0].parent_id == first.spans[0].span_id
    assert spans[0].attributes["rematch.turns"] == 2 and spans[0].attributes["rematch.session.part"] == 1
    assert spans[0].end_ns == 1400 * 1_000_000
    assert {s.parent_id for s in spans[1:]} == {part}
    assert _to_send(trace(tmp_path, grown), second, IDS, acked, hex_id, 99_999) is None
    assert list(changed(second, None)) == second.spans[1:]


def test_the_export_key_is_private_stable_and_checked(tmp_path: Path) -> None:
    key = load_key(tmp_path)
    assert load_key(tmp_path) == key and len(key) == 32
    assert os.stat(tmp_path / "export.key").st_mode & 0o777 == 0o600
    other = Ids(key)
    assert other.trace_id("s") != IDS.trace_id("s") and other.span_id("s", 1) == Ids(key).span_id("s", 1)
    (tmp_path / "export.key").write_text("short\n")
    with pytest.raises(ValueError, match="not an export key"):
        load_key(tmp_path)


def test_parallel_subagents_take_parallel_calls_in_order(tmp_path: Path) -> None:
    """Three Task calls begun together: three subagents, each under its own call, in the order they began."""
    parent = trace(tmp_path, [START, *[rec(i, 5000 + i, "tool_result", tool="Task", call_id=f"c{i}", is_error=False)
                                       for i in (1, 2, 3)]], "p")
    events = tmp_path / "p.events.jsonl"
    events.write_bytes(b"".join(orjson.dumps({"kind": "pre_tool_use", "source_tool_call_id": f"c{i}",
                                              "occurred_at": "1970-01-01T00:00:01.100Z", "action_type": "subagent"})
                                + b"\n" for i in (1, 2, 3)))
    parent = SessionInfo(harness="omp", session_id="p", trace=parent.trace, events=events)
    built = build(parent, IDS, 1, None)
    from rematch_trace.export.run import _place

    taken: set[int] = set()
    got = []
    for start in (1200, 1300, 1400):
        kid = build(trace(tmp_path, [rec(0, start, "session_start", agent={"name": "omp"})], f"k{start}"), IDS, 1, None)
        got.append(_place(kid, built.subagent_calls, taken))
    assert got == [c.span_id for c in built.subagent_calls] and len(set(got)) == 3


def test_the_otlp_json_file_is_what_protobufs_json_mapping_gives_the_sdks_encoding(tmp_path: Path) -> None:
    """The file is written from the spans directly; it must say what the SDK's encoding says, field by field."""
    import base64
    import io

    from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from rematch_trace.export.otlp import Converter, FileSender
    from rematch_trace.export.spans import SpanData

    info = trace(tmp_path, [
        START, rec(1, 1100, "input", text="hi", prelabel="interrupt"),
        rec(2, 1200, "tool_result", tool="bash", call_id="c1", is_error=True, error_class="exit_nonzero", args_hash="ab"),
        rec(3, 1300, "turn_end", model={"id": "m", "provider": "p"}, usage={"input": 1, "output": 2, "cost": 0.5},
            stop_reason="end_turn"),
        rec(4, 1400, "session_shutdown", reasons=["tool_error"]),
    ])
    built = build(info, IDS, 7, None)
    odd = SpanData("odd", 7, 9, None, 1, 2, {"b": True, "i": -3, "f": 1.0, "e": [], "l": ["x", "y"], "n": [1, 2]},
                   [("bare", 5, {}), ("full", 6, {"k": "v"})])
    spans = [*built.spans, odd]

    def hexed(value: object) -> object:
        if isinstance(value, dict):
            return {k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else hexed(v))
                    for k, v in value.items()}
        return [hexed(v) for v in value] if isinstance(value, list) else value

    convert = Converter()
    expected = hexed(MessageToDict(encode_spans([convert(s) for s in spans])))
    out = io.BytesIO()
    FileSender(out, tmp_path / "f.json").send(spans)
    assert orjson.loads(out.getvalue()) == expected


def test_a_book_from_before_keeps_its_sessions_sent_whole(tmp_path: Path) -> None:
    """Schema 1 had no session-span columns: its sessions' spans were all sent, so they count as settled and sent."""
    import sqlite3

    from rematch_trace.store.export_acks import MIGRATIONS, AckBook

    path = tmp_path / "exports.sqlite"
    db = sqlite3.connect(path)
    db.executescript(MIGRATIONS[0])
    db.execute("INSERT INTO acked VALUES ('e', 'omp', 's', 't', 3, x'0102', x'', 0)")
    db.execute("PRAGMA user_version=1")
    db.commit()
    db.close()
    with AckBook(path) as book:
        [got] = book.of_endpoint("e").values()
    assert (got.roots, got.root_digest, got.digest) == (1, b"\x01\x02", b"\x01\x02")
