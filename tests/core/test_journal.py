"""Resumes continue outputs in place under a rollback journal: old or new, never half."""

from __future__ import annotations

import base64
import os
import time
from pathlib import Path

import orjson
import pytest
from test_batch import import_, toy_lines, tree

import rematch_toy
from rematch_trace.importing import source_import as importer
from rematch_trace.importing.batch import settle
from rematch_trace.importing.changes import AHEAD, TAIL_FP, fingerprints, resumable
from rematch_trace.importing.lock import ImportLock
from rematch_trace.importing.outcome import Grown
from rematch_trace.importing.worker import use_host
from rematch_trace.store.datafolder import DataDir
from rematch_trace.store.ledger import Ledger
from rematch_trace.testing import make_host


@pytest.fixture
def host():  # type: ignore[no-untyped-def]
    h = make_host([rematch_toy])
    yield h
    use_host(None)


def journal_lines(out: Path) -> list[dict[str, object]]:
    """Every line in the data folder's journal files."""
    return [orjson.loads(x) for f in sorted((out / "journal").glob("*.jsonl")) for x in f.read_bytes().splitlines()]


def plant(out: Path, entry: dict[str, object]) -> None:
    """A journal file as a killed run leaves it."""
    (out / "journal" / "4242-feed.jsonl").write_bytes(orjson.dumps(entry) + b"\n")


def grown_source(tmp_path: Path, host) -> tuple[Path, Path, bytes]:  # type: ignore[no-untyped-def]
    """A toy transcript imported at half its length, then grown: (source, data folder, trace before)."""
    full = toy_lines("grow", 12)
    lines = full.splitlines(keepends=True)
    src = tmp_path / "src" / "g.jsonl"
    src.parent.mkdir()
    src.write_bytes(b"".join(lines[:17]))
    os.utime(src, (time.time() - 100, time.time() - 100))
    out = tmp_path / "out"
    import_(src.parent, out, host)
    before = (out / "traces" / "grow.jsonl").read_bytes()
    src.write_bytes(full)
    return src, out, before


def clean_import(tmp_path: Path, src: Path, host) -> dict[str, bytes]:  # type: ignore[no-untyped-def]
    fresh = tmp_path / "fresh" / src.name
    fresh.parent.mkdir()
    fresh.write_bytes(src.read_bytes())
    import_(fresh.parent, tmp_path / "fresh_out", host)
    return tree(tmp_path / "fresh_out")


def test_resume_continues_the_trace_in_place(tmp_path: Path, host) -> None:  # type: ignore[no-untyped-def]
    src, out, before = grown_source(tmp_path, host)
    inode = (out / "traces" / "grow.jsonl").stat().st_ino
    summary = import_(src.parent, out, host)
    assert [f.outcome for f in summary.files] == ["resumed"]
    after = (out / "traces" / "grow.jsonl").read_bytes()
    assert (out / "traces" / "grow.jsonl").stat().st_ino == inode  # no copy, no rename
    assert after == clean_import(tmp_path, src, host)["traces/grow.jsonl"]
    # Only the final records are rewritten: everything before them is the old file's bytes.
    kept = len(before) - len(before.splitlines(keepends=True)[-1])
    assert after[: kept - 200] == before[: kept - 200]
    assert list((out / "journal").iterdir()) == []


def test_failed_resume_puts_the_old_bytes_back(tmp_path: Path, host, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    src, out, before = grown_source(tmp_path, host)

    def boom(self: importer.SourceImport) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(importer.SourceImport, "_commit", boom)
    summary = import_(src.parent, out, host)
    assert [f.outcome for f in summary.files] == ["failed"]
    assert (out / "traces" / "grow.jsonl").read_bytes() == before
    assert journal_lines(out) == []  # settled by the run itself
    monkeypatch.undo()
    # A failed file is not remembered as done: the next run imports it whole.
    assert [f.outcome for f in import_(src.parent, out, host).files] == ["imported"]
    assert tree(out)["traces/grow.jsonl"] == clean_import(tmp_path, src, host)["traces/grow.jsonl"]


def test_crash_before_the_ledger_commit_is_rolled_back(tmp_path: Path, host, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    src, out, before = grown_source(tmp_path, host)

    def killed(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # stands for a SIGKILL between the in-place writes and the ledger

    monkeypatch.setattr(Ledger, "record_source", killed)
    with pytest.raises(KeyboardInterrupt):
        import_(src.parent, out, host)
    monkeypatch.undo()
    data = DataDir(out)
    assert [e["source"] for e in journal_lines(out)] == [str(src)]
    assert (out / "traces" / "grow.jsonl").read_bytes() != before  # half-done, in place
    assert settle(data) == 1  # what any rematch command does first
    assert (out / "traces" / "grow.jsonl").read_bytes() == before
    assert journal_lines(out) == []
    assert [f.outcome for f in import_(src.parent, out, host).files] == ["resumed"]
    assert tree(out)["traces/grow.jsonl"] == clean_import(tmp_path, src, host)["traces/grow.jsonl"]


def test_crash_after_the_ledger_commit_keeps_the_new_output(tmp_path: Path, host) -> None:  # type: ignore[no-untyped-def]
    src, out, _before = grown_source(tmp_path, host)
    import_(src.parent, out, host)
    after = (out / "traces" / "grow.jsonl").read_bytes()
    data = DataDir(out)
    with Ledger(data.ledger) as ledger:
        generation = ledger.source(str(src))["saved"]["journal"]  # type: ignore[index]
    # The entry a kill between the ledger commit and its removal leaves behind.
    entry = {"source": str(src), "generation": generation,
             "files": [{"path": "traces/grow.jsonl", "keep": 10, "tail": ""}]}
    plant(out, entry)
    assert settle(data) == 0
    assert (out / "traces" / "grow.jsonl").read_bytes() == after
    assert journal_lines(out) == []


def test_torn_entry_is_dropped(tmp_path: Path, host) -> None:  # type: ignore[no-untyped-def]
    _src, out, before = grown_source(tmp_path, host)
    data = DataDir(out)
    (out / "journal" / "4242-feed.jsonl").write_bytes(b'{"source": "x", "generation": "ab", "fil')
    assert settle(data) == 0
    assert list(data.journal.iterdir()) == []
    assert (out / "traces" / "grow.jsonl").read_bytes() == before


def test_entry_never_writes_outside_the_data_folder(tmp_path: Path, host) -> None:  # type: ignore[no-untyped-def]
    src, out, _before = grown_source(tmp_path, host)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"keep me")
    data = DataDir(out)
    entry = {"source": str(src), "generation": "forged",
             "files": [{"path": "../victim.txt", "keep": 0, "tail": ""}]}
    plant(out, entry)
    settle(data)
    assert victim.read_bytes() == b"keep me"


def test_settle_leaves_a_running_import_alone(tmp_path: Path, host) -> None:  # type: ignore[no-untyped-def]
    src, out, before = grown_source(tmp_path, host)
    data = DataDir(out)
    entry = {"source": str(src), "generation": "running",
             "files": [{"path": "traces/grow.jsonl", "keep": 0, "tail": ""}]}
    plant(out, entry)
    with ImportLock(data.lock):
        assert settle(data) == 0
    assert (out / "traces" / "grow.jsonl").read_bytes() == before
    assert journal_lines(out) == [entry]


@pytest.mark.parametrize("new", [b"xy", b"xyz-and-more-than-before"])
def test_append_file_ends_exactly_where_its_writes_end(tmp_path: Path, new: bytes) -> None:
    from rematch_trace.store.journal import AppendFile

    target = tmp_path / "t.jsonl"
    target.write_bytes(b"keep|old tail")
    f = AppendFile(target, 5)
    assert f.tail == b"old tail"
    assert target.read_bytes() == b"keep|old tail"  # opening changes nothing
    f.begin()
    f.write(new)
    f.commit()
    assert target.read_bytes() == b"keep|" + new


def test_an_entry_rolled_back_in_its_run_is_never_rolled_back_again(tmp_path: Path, host) -> None:  # type: ignore[no-untyped-def]
    # A resume that failed and fell back to a whole import in the same run: if that
    # run is then killed, recovery must not put the resume's old bytes over the new file.
    src, out, _before = grown_source(tmp_path, host)
    import_(src.parent, out, host)
    after = (out / "traces" / "grow.jsonl").read_bytes()
    entry = {"source": str(src), "generation": "fell-back",
             "files": [{"path": "traces/grow.jsonl", "keep": 10, "tail": ""}]}
    (out / "journal" / "4242-feed.jsonl").write_bytes(orjson.dumps(entry) + b"\n" + orjson.dumps({"settled": "fell-back"}) + b"\n")
    assert settle(DataDir(out)) == 0
    assert (out / "traces" / "grow.jsonl").read_bytes() == after


def test_each_run_journals_into_a_file_of_its_own(tmp_path: Path, host, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    # Two runs in one process (as tests and library callers do): the second's
    # entries must land in a file that exists, not in the first run's deleted one.
    src, out, _before = grown_source(tmp_path, host)
    import_(src.parent, out, host)  # a run that resumed, journaled and emptied the journal
    src.write_bytes(src.read_bytes() + toy_lines("grow", 13).splitlines(keepends=True)[-1])
    monkeypatch.setattr(Ledger, "record_source", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        import_(src.parent, out, host)
    assert [e["source"] for e in journal_lines(out)] == [str(src)]


@pytest.mark.parametrize("kept", [1200, 1790, 300])
def test_fingerprints_recorded_after_a_resume_are_the_files_own(tmp_path: Path, host, kept: int) -> None:  # type: ignore[no-untyped-def]
    # A file past the 16 KiB head: the resume reuses the checked head fingerprint, and the new
    # tail's is taken from the bytes read with the check (grown by less than changes.AHEAD: 1200
    # and 1790 lines of 1801 kept), or from the file read again (300 kept: grown by more).
    full = toy_lines("big", 600)
    lines = full.splitlines(keepends=True)
    src = tmp_path / "src" / "b.jsonl"
    src.parent.mkdir()
    src.write_bytes(b"".join(lines[:kept]))
    assert (len(full) - src.stat().st_size > AHEAD) == (kept == 300) and src.stat().st_size > 16 * 1024
    import_(src.parent, tmp_path / "out", host)
    src.write_bytes(full)
    assert [f.outcome for f in import_(src.parent, tmp_path / "out", host).files] == ["resumed"]
    with Ledger(tmp_path / "out" / "ledger.sqlite") as ledger:
        row = ledger.source(str(src))
    assert row is not None and row["offset"] == len(full) > 16 * 1024
    assert (row["head_fp"], row["tail_fp"]) == fingerprints(src, row["offset"], 0)


def test_the_checked_bytes_give_the_tail_fingerprint_of_any_end_they_hold(tmp_path: Path) -> None:
    # Checked.tail_fp against fingerprints() itself, for every end the bytes read hold (a prefix the
    # harness rewrites left out or not), and None for an end past them.
    src = tmp_path / "a.jsonl"
    data = toy_lines("t", 200)
    src.write_bytes(data)
    grown = Grown(20_000, *fingerprints(src, 20_000, 0), b"{}")
    checked = resumable(src, grown, len(data))
    assert checked is not None and checked.start == 20_000 - TAIL_FP and len(checked.data) == len(data) - checked.start
    for end in (20_000, 20_001, 20_000 + TAIL_FP, len(data)):
        for skip in (0, 19_000, 20_000):
            assert checked.tail_fp(end, skip) == fingerprints(src, end, skip)[1]
    assert checked.tail_fp(len(data) + 1, 0) is None
    # A kept part that changed is no continuation.
    src.write_bytes(data[:100] + b"x" + data[101:])
    assert resumable(src, grown, len(data)) is None


def test_show_reads_the_old_trace_after_a_killed_continuation(tmp_path: Path, host, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    src, out, before = grown_source(tmp_path, host)
    monkeypatch.setattr(Ledger, "record_source", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        import_(src.parent, out, host)
    monkeypatch.undo()
    assert (out / "traces" / "grow.jsonl").read_bytes() != before
    env = {**os.environ, "REMATCH_LOAD_PLUGINS": "toy"}
    shown = subprocess.run([sys.executable, "-m", "rematch_trace.cli", "show", "grow", "--json", "--out", str(out)],
                           capture_output=True, env=env, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == before
    assert journal_lines(out) == []


def test_a_resume_retried_after_its_worker_died_is_settled_in_order(tmp_path: Path, host) -> None:  # type: ignore[no-untyped-def]
    """A worker killed mid-resume, and the retry's undo bytes are the half-written ones.

    Committed retry: the dead worker's entry must not put the old bytes back over it.
    Neither committed: newest first, so the trace ends as it was before either.
    """
    src, out, before = grown_source(tmp_path, host)
    trace = out / "traces" / "grow.jsonl"
    keep = len(before) // 2
    half = before[:keep] + b"half-written by a worker that was killed\n"
    first = {"source": str(src), "generation": "dead0001", "at": 1,
             "files": [{"path": "traces/grow.jsonl", "keep": keep,
                        "tail": base64.b64encode(before[keep:]).decode()}]}
    retry = {"source": str(src), "generation": "retry002", "at": 2,
             "files": [{"path": "traces/grow.jsonl", "keep": keep,
                        "tail": base64.b64encode(half[keep:]).decode()}]}
    data = DataDir(out)
    # Neither committed: the later entry (another worker's file, listed last) is undone first.
    trace.write_bytes(before[:keep] + b"the retry's own half\n")
    (out / "journal" / "1000-aaaa.jsonl").write_bytes(orjson.dumps(first) + b"\n")
    (out / "journal" / "2000-bbbb.jsonl").write_bytes(orjson.dumps(retry) + b"\n")
    assert settle(data) == 2
    assert trace.read_bytes() == before
    # The retry committed: both entries are dropped, its output kept.
    import_(src.parent, out, host)
    after = trace.read_bytes()
    with Ledger(data.ledger) as ledger:
        generation = ledger.source(str(src))["saved"]["journal"]  # type: ignore[index]
    committed = dict(retry, generation=generation)
    (out / "journal" / "1000-aaaa.jsonl").write_bytes(orjson.dumps(committed) + b"\n")
    (out / "journal" / "2000-bbbb.jsonl").write_bytes(orjson.dumps(first) + b"\n")
    assert settle(data) == 0
    assert trace.read_bytes() == after


def test_a_grown_file_without_a_saved_state_is_read_whole(tmp_path: Path, host) -> None:  # type: ignore[no-untyped-def]
    # Planning no longer asks whether a grown file has a state to continue from: the query that
    # hands it out reads the state, and a file with none is read whole, its outputs as a cold
    # import makes them.
    full = toy_lines("nostate", 40)
    lines = full.splitlines(keepends=True)
    src = tmp_path / "src" / "n.jsonl"
    src.parent.mkdir()
    src.write_bytes(b"".join(lines[:60]))
    out = tmp_path / "out"
    import_(src.parent, out, host)
    with Ledger(out / "ledger.sqlite") as ledger:
        ledger.db.execute("UPDATE sources SET saved = NULL")
    src.write_bytes(full)
    assert [f.outcome for f in import_(src.parent, out, host).files] == ["imported"]
    cold = tmp_path / "cold"
    import_(src.parent, cold, host)
    got, want = tree(out), tree(cold)
    assert [k for k in got if k.startswith(("traces", "events"))] and all(got[k] == want[k] for k in want if k.startswith(("traces", "events")))
    with Ledger(out / "ledger.sqlite") as ledger:
        row = ledger.source(str(src))
    assert row is not None and row["offset"] == len(full) and row["saved"] is not None
