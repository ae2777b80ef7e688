"""The stored conversation rows (store/conversation_rows.py): a continued import adds a frame, one that went
back drops what followed, a gap or a damaged file is never read in part."""

from __future__ import annotations

from pathlib import Path

from rematch_trace.host.conversation import Called, Returned, Said
from rematch_trace.host.vocab import Session
from rematch_trace.security.redact import default_redactor
from rematch_trace.store import conversation_rows as rows
from rematch_trace.store.datafolder import DataDir

SOURCE = "/home/dev/.claude/projects/x/s.jsonl"
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _encoded(items: list[object]) -> list[list[object]]:
    red = default_redactor()
    return [r for r in (rows.encode(it, red) for it in items) if r is not None]


def test_frames_chain_and_a_gap_is_never_read(tmp_path: Path) -> None:
    data = DataDir(tmp_path)
    first = [Session("", 1, "s1"), Said("", 2, "user", f"use {TOKEN} \udc80 please"),
             Called("", 3, "c1", "Bash", {"command": f"echo {TOKEN}"})]
    second = [Returned("", 4, "c1", "x" * (rows.TEXT_CHARS + 5), False)]
    assert rows.write(data, SOURCE, 0, 100, _encoded(first))
    assert rows.write(data, SOURCE, 100, 180, _encoded(second))
    got = rows.read(data, SOURCE)
    assert got is not None and [type(it) for it in got] == [Session, Said, Called, Returned]
    # Redacted as stored; a lone surrogate kept; a text past the bound cut, with a note.
    assert TOKEN not in repr(got) and "\udc80" in got[1].text
    assert got[3].output.startswith("x" * rows.TEXT_CHARS) and "5 more characters not kept" in got[3].output
    # A continuation from an earlier offset (the import went back): the frames after it are dropped.
    assert rows.write(data, SOURCE, 100, 150, _encoded([Returned("", 5, "c1", "short")]))
    again = rows.read(data, SOURCE)
    assert again is not None and again[-1].output == "short" and len(again) == 4
    # A continuation from where no frame ends: nothing is kept (it would lack a part).
    assert not rows.write(data, SOURCE, 120, 200, _encoded(second))
    assert rows.read(data, SOURCE) is None


def test_a_damaged_file_is_not_read(tmp_path: Path) -> None:
    data = DataDir(tmp_path)
    assert rows.write(data, SOURCE, 0, 10, _encoded([Said("", 1, "assistant", "hello")]))
    path = rows.path_of(data, SOURCE)
    blob = path.read_bytes()
    for bad in (blob[:-3], blob[:-3] + b"zzz", b"not rows\n" + blob[len(rows.MAGIC):]):
        path.write_bytes(bad)
        assert rows.read(data, SOURCE) is None
    rows.forget(data, SOURCE)
    assert not path.exists()
