"""Batch import: find sources, skip the unchanged, continue the grown, import in parallel.

The parent process owns the ledger; workers (``--jobs``) each import whole
source files and hand back a summary, so the output never depends on how
many workers ran.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from rematch_trace.errors import RematchError
from rematch_trace.host.facade import Host, PluginFailure
from rematch_trace.host.source import Problem
from rematch_trace.importing.reader import require_c_backend
from rematch_trace.importing.source_import import SinkFactory, remove_outputs
from rematch_trace.store.datafolder import DataDir, clean_temporaries, reaper
from rematch_trace.store.journal import clear, recover
from rematch_trace.store.ledger import Ledger, as_stored
from rematch_trace.store.states import state_loads

SUFFIXES = (".jsonl", ".jsonl.zst", ".jsonl.gz")
_HEAD_FP = 16 * 1024
_TAIL_FP = 4096
# A file modified within this many seconds of its import may have changed
# without its mtime showing it (coarse timestamps): check its fingerprint too.
_RACY_SECONDS = 2
#: How long ledger writes may wait to be committed together.
_COMMIT_SECONDS = 0.5


@attrs.frozen
class Options:
    """How to import."""

    events: bool = True
    redact: bool = True
    jobs: int = 1
    fsync: bool = False


@attrs.define
class FileResult:
    """The outcome of one source file, as the parent records it."""

    path: str
    harness: str | None
    outcome: str  # imported | resumed | unchanged | skipped | failed
    reason: str | None = None
    sessions: list[dict[str, Any]] = attrs.field(factory=list)
    problems: list[str] = attrs.field(factory=list)
    problem_count: int = 0
    skipped_lines: int = 0
    malformed: int = 0


@attrs.define
class Summary:
    """What a batch import did."""

    files: list[FileResult] = attrs.field(factory=list)
    seconds: float = 0.0

    def count(self, outcome: str) -> int:
        """How many files ended with ``outcome``."""
        return sum(1 for f in self.files if f.outcome == outcome)

    @property
    def failed(self) -> bool:
        """Whether any file failed or any line was skipped."""
        return any(f.outcome == "failed" or f.skipped_lines for f in self.files)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able report."""
        sessions = [s for f in self.files for s in f.sessions]
        reasons: dict[str, int] = {}
        for s in sessions:
            for r in s["reasons"]:
                reasons[r] = reasons.get(r, 0) + 1
        return {
            "files": {o: self.count(o) for o in ("imported", "resumed", "unchanged", "skipped", "failed")},
            "sessions_imported": len(sessions),
            "sessions_flagged": sum(1 for s in sessions if s["flagged"]),
            "flag_reasons": reasons,
            "problems": sum(f.problem_count for f in self.files),
            "lines_skipped": sum(f.skipped_lines for f in self.files),
            "failures": [{"path": f.path, "reason": f.reason} for f in self.files if f.outcome == "failed"],
            "seconds": round(self.seconds, 3),
        }


def walk(root: Path) -> Iterator[Path]:
    """Transcript-like files under ``root``, in sorted order, never following links into loops."""
    seen: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            st = d.stat()
        except OSError:
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen:
            continue
        seen.add(key)
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    subdirs.append(Path(e.path))
                elif e.is_file(follow_symlinks=False) and e.name.endswith(SUFFIXES):
                    yield Path(e.path)
            except OSError:
                continue
        stack.extend(reversed(subdirs))


def discover(host: Host, paths: list[Path]) -> list[tuple[Path, str | None]]:
    """The candidate files: the named paths, or every plugin's default locations."""
    found: list[tuple[Path, str | None]] = []
    if paths:
        for p in paths:
            if p.is_dir():
                found.extend((f, None) for f in walk(p))
            else:
                found.append((p, None))
    else:
        for loc in host.locations():
            if loc.path.is_dir():
                found.extend((f, loc.harness) for f in walk(loc.path))
    seen: set[str] = set()
    unique = []
    for f, hint in found:
        key = os.path.abspath(f)
        if key not in seen:
            seen.add(key)
            unique.append((Path(key), hint))
    return unique


def _fps(path: Path, offset: int, skip: int = 0, head: str | None = None) -> tuple[str | None, str | None]:
    """sha256 of the first bytes after ``skip`` and of the last bytes before ``offset``.

    ``head``, when given, is the head fingerprint already known (not read again).
    """
    skip = min(max(0, skip), offset)
    tail_start = max(skip, offset - _TAIL_FP)
    try:
        with open(path, "rb") as f:  # one open for both: this runs for every changed file
            if head is None:
                f.seek(skip)
                head = hashlib.sha256(f.read(min(_HEAD_FP, offset - skip))).hexdigest()
            f.seek(tail_start)
            tail = hashlib.sha256(f.read(offset - tail_start)).hexdigest()
    except OSError:
        return None, None
    return head, tail


# -- the worker side -------------------------------------------------------------------------

_worker_host: Host | None = None


def _host() -> Host:
    global _worker_host
    if _worker_host is None:
        from rematch_trace.host.loading import load_plugins, pm

        load_plugins()
        _worker_host = Host(pm)
    return _worker_host


@functools.lru_cache(maxsize=4)
def _data_dir(root: str) -> DataDir:
    return DataDir(Path(root))


@functools.lru_cache(maxsize=4)
def _sink_factory(host: Host) -> SinkFactory:
    from rematch_trace.importing.pipeline import sink_factory_for

    return sink_factory_for(host)


def import_file(
    path: str, hint: str | None, grown: dict[str, Any] | None, data_root: str, options: Options
) -> dict[str, Any]:
    """Import one file (in a worker or in-process); return a JSON-able result.

    ``grown`` is what the ledger holds of a file that has grown since: it is
    continued when the part already imported is unchanged, else imported whole.
    """
    from rematch_trace.importing.pipeline import redactors
    from rematch_trace.importing.source_import import import_source
    from rematch_trace.place.domain import decide_domain

    host = _host()
    data = _data_dir(data_root)
    p = Path(path)
    try:
        st = p.stat()
        if not stat.S_ISREG(st.st_mode):
            # A FIFO or device named on the command line would block or never end.
            return {"outcome": "failed", "reason": "not a regular file", "harness": None}
        saved = _resumable(p, grown)
        source = host.detect(p, hint)
        if source is None:
            return {"outcome": "skipped", "reason": "no plugin recognises this file", "harness": None}
        r_text, r_input = redactors(options.redact)
        outcome = import_source(
            host,
            source,
            data,
            saved=saved if saved and saved.get("harness") == source.harness else None,
            sink_factory=_sink_factory(host) if options.events else None,
            redact=r_text,
            redact_input=r_input,
            fsync=options.fsync,
        )
    except PluginFailure as err:
        return {"outcome": "failed", "reason": str(err), "harness": None}
    except (OSError, RematchError) as err:
        return {"outcome": "failed", "reason": f"{type(err).__name__}: {err}", "harness": None}
    except Exception as err:  # a bug must cost one file, never the batch
        if os.environ.get("REMATCH_DEBUG"):
            import traceback

            traceback.print_exc()
        return {"outcome": "failed", "reason": f"internal error: {type(err).__name__}: {err}", "harness": None}
    sessions = []
    for s in outcome.sessions:
        sessions.append(
            {
                "session_id": s.session_id,
                "agent_kind": s.agent_kind,
                "trace_path": str(s.trace_path.relative_to(data.root)),
                "events_path": str(s.events_path.relative_to(data.root)) if s.events_path else None,
                "flagged": s.flagged,
                "reasons": s.reasons,
                "seqs": s.seqs,
                "counts": s.counts,
                "cwd": s.cwd,
                "repo": s.repo,
                "repo_remote": s.repo_remote,
                "domain": decide_domain(s.cwd, s.repo, s.repo_remote),
            }
        )
    # In the worker, while the file is fresh in the cache: the parent records serially.
    # A continued file's head was just checked, and lies wholly in the part kept.
    skip = source.mutable_prefix
    same_head = saved and grown and saved.get("head_skip", 0) == skip and grown["offset"] - skip >= _HEAD_FP
    known = grown["head_fp"] if grown and same_head else None
    head, tail = _fps(p, outcome.offset, skip, known)
    return {
        "outcome": "resumed" if outcome.resumed and saved else "imported",
        "harness": source.harness,
        "sessions": sessions,
        "problems": [str(pr) for pr in outcome.problems],
        "problem_count": outcome.problem_count,
        "skipped_lines": sum(1 for pr in outcome.problems if pr.skipped_data),
        "malformed": outcome.malformed,
        "offset": outcome.offset,
        "head_fp": head,
        "tail_fp": tail,
        "saved": outcome.saved_blob,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
    }


# -- the parent side -------------------------------------------------------------------------


class ImportLock:
    """An exclusive lock on a data folder, so two imports never interleave."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> ImportLock:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = os.read(self.fd, 32).decode(errors="replace").strip() or "?"
            finally:
                os.close(self.fd)
            raise RematchError(
                f"another rematch import is running on {self.path.parent} (pid {holder} holds the lock {self.path}); "
                "try again when it ends"
            ) from None
        os.ftruncate(self.fd, 0)
        os.write(self.fd, str(os.getpid()).encode())
        return self

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def _plan(row: dict[str, Any] | None, path: Path, st: os.stat_result | None) -> tuple[str, dict[str, Any] | None]:
    """``skip``, ``full``, or ``grown`` (with what the worker needs to check and continue) for one file."""
    if row is None or st is None:
        return "full", None
    if st.st_size == row["size"] and st.st_mtime_ns == row["mtime_ns"]:
        racy = abs(row["imported_at"] - st.st_mtime_ns / 1e9) < _RACY_SECONDS
        if not racy:
            return "skip", None
        skip = (state_loads(row["saved"]) if row["saved"] else {}).get("head_skip", 0)
        head, tail = _fps(path, row["offset"] or st.st_size, skip)
        if head == row["head_fp"] and tail == row["tail_fp"]:
            return "skip", None
        return "full", None
    offset = row["offset"] or 0
    if row["outcome"] in ("imported", "resumed") and row["saved"] and st.st_size > offset >= 0 and st.st_size >= row["size"]:
        # Whether the kept part is unchanged is checked in the worker, in parallel.
        return "grown", {"offset": offset, "head_fp": row["head_fp"], "tail_fp": row["tail_fp"], "saved": row["saved"]}
    return "full", None


def _resumable(path: Path, grown: dict[str, Any] | None) -> dict[str, Any] | None:
    """The saved state to continue ``path`` from, if the part already imported is unchanged."""
    if not grown:
        return None
    saved: dict[str, Any] = state_loads(grown["saved"])
    head, tail = _fps(path, grown["offset"], saved.get("head_skip", 0))
    if head == grown["head_fp"] and tail == grown["tail_fp"]:
        return saved
    return None


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None


def run_import(
    paths: list[Path],
    data: DataDir,
    options: Options,
    *,
    host: Host | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Summary:
    """Import every source under ``paths`` (or the default locations) into ``data``."""
    global _worker_host
    started = time.monotonic()
    require_c_backend()
    if host is not None:
        _worker_host = host  # forked workers inherit it
    data.ensure()
    summary = Summary()
    with ImportLock(data.lock):
        clean_temporaries(data.traces)
        clean_temporaries(data.events)
        clean_temporaries(data.pending)
        host = host or _host()
        with Ledger(data.ledger) as ledger:
            recover(data, _committed(ledger), options.fsync)
            rows = {row["path"]: row for row in ledger.sources()}

            def planned() -> Iterator[tuple[Path, str | None, dict[str, Any] | None, int]]:
                found = [(path, hint, _stat(path)) for path, hint in discover(host, paths)]
                todo = []
                for path, hint, st in found:
                    row = rows.get(as_stored(str(path)))
                    plan, grown = _plan(row, path, st)
                    if plan == "skip":
                        summary.files.append(FileResult(str(path), (row or {}).get("harness"), "unchanged"))
                        continue
                    size = st.st_size if st is not None else 0
                    work = size - grown["offset"] if grown else size
                    if options.jobs <= 1:
                        yield path, hint, grown, work
                    else:
                        todo.append((path, hint, grown, work))
                # The most work first keeps every worker busy to the end.
                todo.sort(key=lambda t: -t[3])
                yield from todo

            known = ledger.session_keys()
            # Results are committed a batch at a time (a commit per file costs more than
            # the record); outputs of sessions a source no longer makes go once the
            # rows naming them are committed away. A kill loses at most the batch,
            # whose resumes the journal then rolls back: the next run redoes them.
            removals: list[str] = []
            committed_at = time.monotonic()

            def commit() -> None:
                ledger.commit()
                for sid in removals:
                    remove_outputs(data, sid)
                removals.clear()

            # The loop ends when the pool has shut down.
            for path, res in _run(planned(), data, options, progress):
                ledger.begin()
                fr, gone = _record(ledger, path, res, known.get(as_stored(str(path)), set()))
                summary.files.append(fr)
                removals.extend(gone)
                if time.monotonic() - committed_at > _COMMIT_SECONDS:
                    commit()
                    committed_at = time.monotonic()
            commit()
            # Every worker is gone and every result recorded. A file that failed may have
            # left a resume uncommitted (its worker died, or its rollback failed): settle
            # the journal entry by entry. Otherwise every resume is committed.
            if any(f.outcome == "failed" for f in summary.files):
                recover(data, _committed(ledger), options.fsync)
            else:
                clear(data)
        # Replaced files still queued for unlinking: this process's now, and any
        # a worker had queued when the pool shut it down.
        reaper.drain()
        if options.jobs > 1:
            for folder in (data.traces, data.events, data.pending):
                clean_temporaries(folder)
    summary.files.sort(key=lambda f: f.path)
    summary.seconds = time.monotonic() - started
    return summary


def _committed(ledger: Ledger) -> Callable[[str], str | None]:
    """The generation of the last committed resume of a source (see :mod:`rematch_trace.store.journal`)."""

    def committed(source: str) -> str | None:
        row = ledger.source(source)
        saved = (row or {}).get("saved") or {}
        generation = saved.get("journal")
        return generation if isinstance(generation, str) else None

    return committed


def settle(data: DataDir) -> int:
    """Settle what a killed import left in place, unless an import is running (it settles them itself).

    The reading commands call this first, so they never read half of a resumed trace.
    """
    if not data.journal.is_dir() or not any(data.journal.glob("*.jsonl")) or not data.ledger.exists():
        return 0
    try:
        with ImportLock(data.lock), Ledger(data.ledger) as ledger:
            return recover(data, _committed(ledger))
    except RematchError:
        return 0


#: A worker task takes files until it holds this many, or this many bytes to read:
#: one task per small file would leave the workers waiting on the parent to hand out work.
_TASK_FILES = 32
_TASK_BYTES = 2 << 20


def import_files(
    files: list[tuple[str, str | None, dict[str, Any] | None]], data_root: str, options: Options
) -> list[dict[str, Any]]:
    """:func:`import_file` for each of a task's files."""
    return [import_file(path, hint, grown, data_root, options) for path, hint, grown in files]


def _tasks(
    todo: Iterator[tuple[Path, str | None, dict[str, Any] | None, int]],
) -> Iterator[list[tuple[Path, str | None, dict[str, Any] | None]]]:
    task: list[tuple[Path, str | None, dict[str, Any] | None]] = []
    work = 0
    for path, hint, grown, size in todo:
        task.append((path, hint, grown))
        work += size
        if len(task) >= _TASK_FILES or work >= _TASK_BYTES:
            yield task
            task, work = [], 0
    if task:
        yield task


def _run(
    todo: Iterator[tuple[Path, str | None, dict[str, Any] | None, int]],
    data: DataDir,
    options: Options,
    progress: Callable[[int, int], None] | None,
) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Import each planned file, in process or in workers; yield (path, result) as each ends."""
    if options.jobs <= 1:
        planned = list(todo)
        for n, (path, hint, grown, _work) in enumerate(planned, 1):
            yield path, import_file(str(path), hint, grown, str(data.root), options)
            if progress:
                progress(n, len(planned))
        return
    tasks = list(_tasks(todo))
    if not tasks:
        return  # nothing changed: no pool to start and stop
    import multiprocessing
    from concurrent.futures import Future, ProcessPoolExecutor, as_completed

    # fork: workers start at once with the parent's plugins already loaded.
    ctx = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
    with ProcessPoolExecutor(max_workers=options.jobs, mp_context=ctx) as pool:
        futures: dict[Future[list[dict[str, Any]]], list[Path]] = {}
        for task in tasks:
            files = [(str(path), hint, grown) for path, hint, grown in task]
            futures[pool.submit(import_files, files, str(data.root), options)] = [path for path, _, _ in task]
        total = sum(len(paths) for paths in futures.values())
        n = 0
        for future in as_completed(futures):
            paths = futures[future]
            try:
                results = future.result()
            except Exception as err:  # a worker that died (killed, out of memory)
                failed = {"outcome": "failed", "reason": f"worker failed: {type(err).__name__}: {err}", "harness": None}
                results = [dict(failed) for _ in paths]
            for path, res in zip(paths, results, strict=True):
                n += 1
                yield path, res
                if progress:
                    progress(n, total)


def _record(
    ledger: Ledger, path: Path, res: dict[str, Any], before: set[tuple[str, str]]
) -> tuple[FileResult, list[str]]:
    """Write one file's outcome to the ledger; return it and the session ids whose outputs must go."""
    outcome = res["outcome"]
    fr = FileResult(
        str(path),
        res.get("harness"),
        outcome,
        reason=res.get("reason"),
        sessions=res.get("sessions", []),
        problems=res.get("problems", []),
        problem_count=res.get("problem_count", 0),
        skipped_lines=res.get("skipped_lines", 0),
        malformed=res.get("malformed", 0),
    )
    if outcome in ("imported", "resumed"):
        after = {(res["harness"], s["session_id"]) for s in res["sessions"]}
        gone = sorted(before - after)
        ledger.record_source(
            str(path),
            harness=res["harness"],
            size=res["size"],
            mtime_ns=res["mtime_ns"],
            outcome=outcome,
            head_fp=res["head_fp"],
            tail_fp=res["tail_fp"],
            offset=res["offset"],
            malformed=res.get("malformed", 0),
            problems=res.get("problem_count", 0),
            saved=res.get("saved"),
            sessions=res["sessions"],
            forget=gone,
        )
        # Only once the ledger no longer names them: a crash before that leaves
        # unreferenced files, never a ledger row without its trace.
        return fr, [sid for _harness, sid in gone]
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    # A failed file keeps the sessions it produced before: nothing is lost. Neither
    # it nor an unclaimed file is remembered as done: the next run looks again
    # (a plugin may have been installed or fixed meanwhile).
    ledger.record_source(
        str(path), harness=res.get("harness"), size=size, mtime_ns=-1, outcome=outcome, reason=res.get("reason")
    )
    return fr, []


def print_problems(summary: Summary, limit: int = 10, stream: Any = None) -> None:
    """One line per problem (file and line), at most ``limit`` per file."""
    out = stream or sys.stderr
    for f in summary.files:
        for p in f.problems[:limit]:
            print(f"rematch: {p}", file=out)
        if f.problem_count > limit:
            print(f"rematch: {f.path}: {f.problem_count - limit} more problems", file=out)
        if f.outcome == "failed":
            print(f"rematch: {f.path}: failed: {f.reason}", file=out)


__all__ = ["Options", "Problem", "Summary", "discover", "import_file", "print_problems", "run_import", "walk"]
