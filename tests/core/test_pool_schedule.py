"""How the local pool hands tasks to its worker processes (real forked workers)."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import attrs
import pytest

from rematch_trace.importing import pool
from rematch_trace.importing.executor import TASK_BYTES
from rematch_trace.importing.outcome import (
    FileOutcome,
    Grown,
    WorkItem,
    failed,
    pack,
    unpack_item,
    unpack_outcome,
)
from rematch_trace.importing.settings import ImportSettings
from rematch_trace.store.claims import Conflict
from rematch_trace.store.rows import SessionRow


def _which_worker(item: WorkItem, settings: ImportSettings, data_root: str) -> FileOutcome:
    # Runs in the forked worker: says which process imported the file.
    return failed(f"pid {os.getpid()}")


def test_the_largest_files_go_to_different_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The planner hands files over largest first. Given worker by worker, the first
    # worker took the two largest (its task and the one queued ahead of it) and the
    # second worker all the rest, finishing long before the first.
    monkeypatch.setattr(pool, "import_file", _which_worker)
    sizes = [9 * TASK_BYTES, 8 * TASK_BYTES, 7 * TASK_BYTES, 6 * TASK_BYTES] + [1000] * 40
    items = [WorkItem(f"/nowhere/{i}.jsonl", None, None, work) for i, work in enumerate(sizes)]
    local = pool.LocalPool(ImportSettings(jobs=2), str(tmp_path))
    # The pool consumes the list it is given as it hands the files out: give it a copy.
    done = {item.path: outcome.reason for item, outcome in local.run(list(items), lambda item: item)}
    assert len(done) == len(items)
    by_size = [done[item.path] for item in items]
    assert len(set(by_size)) == 2, by_size  # both workers imported files
    # Round one: the largest to one worker, the second largest to the other; round two alike.
    assert by_size[0] != by_size[1]
    assert by_size[2] != by_size[3]


def _full_outcome(item: WorkItem) -> FileOutcome:
    # Every field away from its default, nested records included, and the item itself as the
    # worker received it (its repr names every field) in the reason.
    sid = Path(item.path).stem
    session = SessionRow(sid, "sub", f"traces/{sid}.jsonl", None, True, ["redirect"], {"redirect": [3, 4]},
                         {"input": 2, "tool_call": 1}, "/home/u/p", "/home/u/p", None, "work")
    return FileOutcome(
        "resumed", harness="claude_code", reason=repr(item), sessions=[session, attrs.evolve(session, session_id=sid + "b")],
        kept_live=["live-1"], problems=["line 3: bad"], problem_count=2, skipped_lines=1, malformed=1, offset=123,
        head_fp="a" * 64, tail_fp="b" * 64, saved=b'{"offset":123}', size=456, mtime_ns=789, plugin_failures=["p: x"],
        conflicts=[Conflict(sid, "theirs", 5, 7)], stamps={sid: (1, 2, 3)},
        said=(0, 10, [("", "session", sid, None, ""), ("", "output", "c1", 5, "text")], False),
        traces={f"traces/{sid}.jsonl": (0, 20, [(0, 20, b"d" * 16, "prompt", "hi", 1, 5, None, False)], 5, sid,
                                        True, (1, 2, 3))},
    )


def _echo(item: WorkItem, settings: ImportSettings, data_root: str) -> FileOutcome:
    return _full_outcome(item)


def test_outcomes_and_items_cross_the_pipe_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The local pool passes work items and outcomes as the lists of their fields (pack): every
    # field arrives as it was sent, through real forked workers, each way.
    defaults = FileOutcome("imported")
    for field in attrs.fields(FileOutcome):
        assert getattr(_full_outcome(WorkItem("/x/y.jsonl", None, None, 0)), field.name) != getattr(defaults, field.name)
    monkeypatch.setattr(pool, "import_file", _echo)
    items = [WorkItem(f"/nowhere/{i}.jsonl", "claude_code" if i % 2 else None,
                      Grown(10 + i, "h" * 64, "t" * 64, b'{"s":1}') if i % 3 else None, 1000 + i,
                      owned=(("claude_code", f"s{i}"), ("codex", "x")), unread=False, known=bool(i % 2))
             for i in range(40)]
    local = pool.LocalPool(ImportSettings(jobs=2), str(tmp_path))
    got = dict(local.run(list(items), lambda item: item))
    assert len(got) == len(items)
    for item, outcome in got.items():
        assert outcome == _full_outcome(item)  # (its reason: the item as the worker received it)
    for value in (_full_outcome(items[1]), items[1], items[3]):
        packed = pickle.loads(pickle.dumps(pack(value)))
        assert (unpack_outcome(packed) if isinstance(value, FileOutcome) else unpack_item(packed)) == value
