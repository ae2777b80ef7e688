"""How the local pool hands tasks to its worker processes (real forked workers)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rematch_trace.importing import pool
from rematch_trace.importing.executor import TASK_BYTES
from rematch_trace.importing.outcome import FileOutcome, WorkItem, failed
from rematch_trace.importing.settings import ImportSettings


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
