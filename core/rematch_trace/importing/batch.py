"""Batch import: find sources, skip the unchanged, continue the grown, import on an executor.

This process is the one ledger writer. It plans (from the ledger's brief
rows: no saved state is read for an unchanged file), hands the work to an
executor (:mod:`rematch_trace.importing.pool`), and records each
:class:`FileOutcome` as it arrives, committing in short batches. A first
Ctrl-C or SIGTERM stops the run within about a second, with every finished
file recorded; a second one stops it at once. Either way the workers are
gone before the import lock is released.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from rematch_trace.errors import NothingFound, RematchError
from rematch_trace.host.facade import Host
from rematch_trace.host.fs import SUFFIXES, exists, stat_of
from rematch_trace.importing.changes import plan, stat_with_members
from rematch_trace.importing.conflicts import Conflicts
from rematch_trace.importing.discovery import Searched, discover, walk
from rematch_trace.importing.executor import Executor, Interrupted
from rematch_trace.importing.lock import ImportLock
from rematch_trace.importing.settings import ImportSettings, Progress
from rematch_trace.importing.summary import FileResult, Summary, print_problems
from rematch_trace.importing.worker import use_host, worker_host
from rematch_trace.store.datafolder import DataDir, clean_temporaries, reaper
from rematch_trace.store.journal import clear, recover
from rematch_trace.store.ledger import Ledger, as_stored

if TYPE_CHECKING:
    from rematch_trace.importing.outcome import FileOutcome, WorkItem
    from rematch_trace.store.search_handover import HandedRows

#: How long ledger writes may wait to be committed together.
COMMIT_SECONDS = 0.5
#: Whether :func:`run_import`'s workers hand the search index their rows (bench/search.py's A/B turns it off).
HAND_OVER = True


#: Up to this many files are looked up in the ledger one by one; more, and its rows are read in one pass.
FEW_FILES = 64


def _plan_all(
    found: list[tuple[str, str | None]], ledger: Ledger, summary: Summary, largest_first: bool,
    settings: ImportSettings | None = None, host: Host | None = None,
) -> list[WorkItem]:
    """The files to import (the most work first, for parallel executors); unchanged ones only counted.

    A file whose ledger row was made under other ``settings`` (redaction, events, rule
    versions: :attr:`ImportSettings.outputs_key`, read from the planning index, no file
    opened) is read whole again, and so is every file with ``settings.force``; either is
    counted in :attr:`Summary.redone` with why.
    """
    key_now = settings.outputs_key if settings is not None else None
    force = settings is not None and settings.force
    # Sorted in place, as the ledger stores paths: no second list of an archive's paths.
    found.sort(key=lambda f: as_stored(f[0]))
    rows = _rows_of([as_stored(path) for path, _ in found] if len(found) <= FEW_FILES else None, ledger)
    row = next(rows, None)
    todo: list[WorkItem] = []
    for path, hint in found:
        key = as_stored(path)
        # A merge of two sorted lists: the ledger's rows are never all in memory.
        while row is not None and row["path"] < key:
            row = next(rows, None)
        mine = row if row is not None and row["path"] == key else None
        # A file found by a plugin's Location.names (no .jsonl) may be a source with members.
        members = None if path.endswith(SUFFIXES) or host is None else host.members(Path(path))
        try:
            size, mtime_ns, _regular = stat_of(path) if members is None else stat_with_members(path, members)
        except (OSError, RematchError):
            size, mtime_ns = None, -1
        decision, grown = plan(mine, path, size, mtime_ns, ledger, members is not None)
        if decision != "full" and mine is not None and (force or mine["settings"] != key_now):
            # Outputs made under other settings (or --force): read whole, as a new file.
            from rematch_trace.importing.settings import describe_change

            why = "--force" if force else describe_change(mine["settings"], key_now or "")
            summary.redone[why] = summary.redone.get(why, 0) + 1
            decision, grown = "full", None
        if decision == "skip":
            summary.unchanged(mine["harness"] if mine is not None else None)
            continue
        # Loaded by the first file to import: a rerun that finds nothing to do never needs it.
        from rematch_trace.importing.outcome import WorkItem

        work = max(0, (size or 0) - (grown.offset if grown and members is None else 0))
        # What the ledger holds of the file (its sessions, a grown file's state) is read when
        # the file is handed out: 100,000 grown files do not hold it all at once.
        todo.append(WorkItem(path, hint, grown, work, unread=mine is not None))
    # Consumed: the work items hold what is still needed (an archive's worth of tuples freed).
    found.clear()
    if largest_first:
        # The most work first keeps every worker busy to the end.
        todo.sort(key=lambda item: -item.work)
    return todo


#: A ledger with fewer sources than this (and some) has its workers forked only once there is work.
EARLY_FORK_SOURCES = 10_000


def _fork_early(path: Path) -> bool:
    """Whether local workers are forked before discovery rather than when the first file is handed out.

    A forked worker starts with its parent's resident memory: forked after the discovery and
    planning of 100,000 files, each would carry them. A small archive's planning weighs
    little, and a rerun that finds nothing to do (most of them) then forks nothing. A
    first import (no ledger, or an empty one) is work whatever its size: forked early.
    """
    if not path.exists():
        return True
    try:
        with Ledger(path, readonly=True) as book:
            known = book.source_count(EARLY_FORK_SOURCES)
    except sqlite3.Error:
        return True  # the import itself says what is wrong with the ledger
    return known == 0 or known >= EARLY_FORK_SOURCES


def _rows_of(keys: list[str] | None, ledger: Ledger) -> Iterator[Any]:
    """The ledger's brief rows in path order: of ``keys`` alone when they are few, else (``None``) all."""
    if keys is None:
        yield from ledger.sources_brief()
        return
    # A few files (what a watcher hands over) cost a lookup each, not a pass over every row.
    for key in keys:
        row = ledger.source_brief(key)
        if row is not None:
            yield row


class _Signals:
    """SIGINT and SIGTERM during a run: the first stops it soon, the second at once."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self.signum: int | None = None
        self._old: dict[int, Any] = {}

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._old[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, old in self._old.items():
            signal.signal(signum, old)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:
            # The second: no more waiting. The workers go first, so the lock
            # (which they share) is released only with the last process of the run.
            self.executor.kill()
            os._exit(128 + signum)
        self.signum = signum
        self.executor.stop()
        if getattr(self.executor, "abortable", False):
            raise Interrupted(signum)


def make_executor(
    settings: ImportSettings, data: DataDir, progress: Progress | None, scheduler: str | None = None
) -> Executor:
    """The executor for ``settings``: a Dask cluster with ``scheduler``, else this process for one job, else a local pool."""
    if scheduler is not None:
        from rematch_trace.importing.cluster import DaskExecutor, parse_scheduler

        return DaskExecutor(settings, str(data.root), parse_scheduler(scheduler), progress)
    from rematch_trace.importing.pool import InProcess, LocalPool

    if settings.jobs <= 1:
        return InProcess(settings, str(data.root), progress)
    return LocalPool(settings, str(data.root), progress)


def run_import(
    paths: Sequence[Path | str],
    data: DataDir,
    settings: ImportSettings,
    *,
    host: Host | None = None,
    progress: Progress | None = None,
    executor: Executor | None = None,
    scheduler: str | None = None,
    name_clean: bool = True,
) -> Summary:
    """Import every source under ``paths`` (or the default locations) into ``data``.

    ``paths`` are local paths, or fsspec URLs as strings (see :mod:`rematch_trace.host.fs`);
    ``scheduler`` runs the per-file work on a Dask cluster (see :mod:`rematch_trace.importing.cluster`).
    Without ``name_clean``, :attr:`Summary.files` lists only the files worth naming (failed,
    skipped, with problems): what the command prints, in memory that does not grow per clean file.

    Raises :class:`~rematch_trace.importing.pool.Interrupted` (after recording
    what finished) when a signal stopped the run.
    """
    started = time.monotonic()
    if host is not None:
        use_host(host)  # forked workers inherit it
    # Nothing to read at all: say so before a data folder is made for nothing.
    # (A missing path beside readable ones fails alone, named, like any unreadable file.)
    if paths and not any(exists(p) for p in paths):
        raise NothingFound(f"no such file or folder: {', '.join(str(p) for p in paths)}")
    data.ensure()
    with ImportLock(data.lock), contextlib.ExitStack() as rows:
        clean_outputs(data)
        host = worker_host()
        searched: list[Searched] = []
        handed = None
        if scheduler is None and HAND_OVER:
            # The workers hand the search index the rows of what they read (its source pass reads
            # no transcript again); a cluster's workers do not (the pass reads them here, as before).
            from rematch_trace.store.search_handover import HandedRows

            handed = HandedRows(data.root)
            rows.callback(handed.close)
            settings = attrs.evolve(settings, search_rows=True)
        summary = import_locked(lambda: discover(host, paths, searched), data, settings, progress=progress,
                                executor=executor, scheduler=scheduler, name_clean=name_clean, handed=handed)
        summary.searched = searched
        for place in searched:
            if paths and place.exists and not place.found:
                # Every name a walk takes: the endings (the plugins' too) and the plugins' other sources'
                # names (Gemini CLI's session documents, opencode's databases).
                looked = [*("*" + s for s in host.suffixes()), *(n for n in host.source_names())]
                summary.skip_unread(place.path, f"a folder with no transcript files in it or under it "
                                                f"(looked for {', '.join(dict.fromkeys(looked))}; "
                                                "symbolic links are not followed)")
        if not paths:
            from rematch_trace.host.known import absent_homes

            summary.notes.extend(absent_homes({name for name, _ in host.pm.list_name_plugin()}))
        # Replaced files still queued for unlinking: this process's now, and any
        # a worker had queued when it ended.
        reaper.drain()
        if summary.interrupted is None:
            # Stored summaries and the search index follow the traces: only what changed is read.
            from rematch_trace.importing import search_sources  # noqa: F401  (the index sync's reader of sources)
            from rematch_trace.report.follow import follow_outputs

            follow_outputs(data, jobs=1 if scheduler is not None else settings.jobs, handed=handed)
        handed_out = summary.interrupted is not None or summary.count("unchanged") < sum(summary.counts.values())
        if (settings.jobs > 1 or scheduler is not None) and handed_out:
            # A killed worker's temporaries (a cluster's workers have no parent to sweep them).
            clean_outputs(data)
    summary.files.sort(key=lambda f: f.path)
    summary.seconds = time.monotonic() - started
    if summary.interrupted is not None:
        raise Interrupted(summary.interrupted, summary)
    return summary


def clean_outputs(data: DataDir) -> None:
    """Remove the temporary and replaced output files a killed run left behind (under the lock)."""
    for folder in (data.traces, data.events, data.pending):
        clean_temporaries(folder)


def import_locked(
    found: list[tuple[str, str | None]] | Callable[[], list[tuple[str, str | None]]],
    data: DataDir,
    settings: ImportSettings,
    *,
    progress: Progress | None = None,
    executor: Executor | None = None,
    ledger: Ledger | None = None,
    scheduler: str | None = None,
    name_clean: bool = True,
    handed: HandedRows | None = None,
) -> Summary:
    """Import the ``found`` files (each with its harness hint) into ``data``, whose lock the caller holds.

    The body of :func:`run_import`, for a caller that keeps the lock across
    runs (``rematch watch``), and may keep its ``ledger`` open too. It settles
    the journal, plans against the ledger, imports, records and commits; a
    signal stops it as it stops :func:`run_import`, with
    :attr:`Summary.interrupted` set (not raised). ``found`` may be a function
    that discovers them: it is then called once local workers are forked, so
    they do not start with an archive's paths in their memory. Whatever
    happens, the executor's workers are gone when this returns or raises.
    ``handed`` keeps the search index's rows each outcome carries (``settings.search_rows``).
    """
    summary = Summary(name_clean=name_clean)
    host = worker_host()  # loaded before any worker is forked: workers start with the plugins
    executor = executor or make_executor(settings, data, progress, scheduler)
    start = getattr(executor, "start", None)
    if start is not None and settings.jobs > 1 and callable(found) and _fork_early(data.ledger):
        start()  # forked before discovery and planning fill this process
    with contextlib.ExitStack() as stack:
        try:
            if callable(found):
                found = found()  # under the default signal handlers: Ctrl-C stops it at once
            book = ledger if ledger is not None else stack.enter_context(Ledger(data.ledger))
            signals = stack.enter_context(_Signals(executor))
            recover(data, _committed(book), settings.fsync)
            # The lock's mtime marks when this run began (see rematch_trace.store.claims): set after
            # the journal is settled (what it restored predates the run), and by every run of a
            # caller that keeps the lock across runs (rematch watch).
            _mark_run_start(data)
            book.settings_key = settings.outputs_key
            todo = _plan_all(found, book, summary, settings.jobs > 1 or scheduler is not None, settings, host)
            if todo:
                # Checked once there is something to read (the reader and ijson load only then).
                from rematch_trace.importing.reader import require_c_backend

                require_c_backend()
            # Said by this process (default_locations), before workers inherit the host.
            summary.plugin_failed(host.drain_isolated())

            def prepare(item: WorkItem) -> WorkItem:
                # Read now, one file at a time: the sessions the ledger gives the file (they travel
                # with it: the worker never opens the ledger), a grown file's fingerprints and state.
                if not item.unread:
                    return item
                from rematch_trace.importing.outcome import Grown, WorkItem

                key = as_stored(item.path)
                grown = item.grown
                if grown is not None and grown.saved is None:
                    keys, head, tail, saved = book.continuation_of(key)  # one query for both
                    grown = Grown(grown.offset, head, tail, saved)
                else:
                    keys = book.session_keys_of(key)
                # (Made directly: attrs.evolve reads every field back by name, for each file handed out.)
                return WorkItem(item.path, item.hint, grown, item.work, owned=tuple(sorted(keys)), unread=False, known=True)

            removals: list[tuple[str, str]] = []
            conflicts = Conflicts(data)
            try:
                _record_all(book, data, executor.run(todo, prepare), summary, removals, conflicts, handed)
            except Interrupted:
                pass
        finally:
            # The one place the workers end, whatever happened: before the batch is committed
            # and the journal settled (no worker may still be writing), and before the caller
            # releases the lock. After something unforeseen, what is uncommitted stays in the
            # journal for the next command to settle, as after a kill.
            executor.kill()
        _commit(book, data, removals)
        summary.conflicts = conflicts.lines(book)
        summary.worker_deaths.extend(executor.deaths)
        report = getattr(executor, "report", None)
        summary.workers = report() if callable(report) else {}
        # A file that failed, or a run that was stopped, may have left a resume
        # uncommitted: settle the journal entry by entry. Otherwise every resume
        # is committed and the journal is emptied without being read.
        if signals.signum is not None or any(f.outcome == "failed" for f in summary.files):
            recover(data, _committed(book), settings.fsync)
        else:
            clear(data)
        summary.sessions_total, summary.flagged_total = book.totals()
    # Read once the handlers are gone: a signal that came after the last file
    # (while the journal was settled, say) still stops the caller.
    summary.interrupted = signals.signum
    return summary


def _record_all(
    ledger: Ledger, data: DataDir, results: Iterator[tuple[WorkItem, FileOutcome]], summary: Summary,
    removals: list[tuple[str, str]], conflicts: Conflicts, handed: HandedRows | None = None,
) -> None:
    """Record each outcome as it arrives, committing a batch at a time (its search rows kept in ``handed``).

    A commit per file costs more than the record. A kill loses at most the batch,
    whose resumes the journal then rolls back: the next run redoes them. Outputs
    of sessions a source no longer makes go once the rows naming them are committed.
    """
    committed_at = time.monotonic()
    for item, outcome in results:
        ledger.begin()
        removals.extend(_record(ledger, item, outcome, summary, conflicts))
        if outcome.said is not None and handed is not None and outcome.ok:
            handed.put(as_stored(item.path), outcome.said)
        if outcome.traces and handed is not None and outcome.ok:
            for key, rows in outcome.traces.items():
                handed.put_trace(key, rows)
        if time.monotonic() - committed_at > COMMIT_SECONDS:
            _commit(ledger, data, removals)
            committed_at = time.monotonic()


def _commit(ledger: Ledger, data: DataDir, removals: list[tuple[str, str]]) -> None:
    ledger.commit()
    if removals:
        from rematch_trace.importing.source_import import remove_outputs

        started = _run_started(data)
        for harness, sid in removals:
            if ledger.session_source(harness, sid) is not None:
                continue  # another file's copy of the session is recorded: its outputs stay
            try:
                if os.stat(data.trace_path(sid)).st_mtime_ns >= started:
                    continue  # written this run by another file, whose outcome is still to come
            except OSError:
                pass
            remove_outputs(data, sid)
    removals.clear()


def _mark_run_start(data: DataDir) -> None:
    """Set the import lock's mtime to now: when this run began, for the claims and the sweep of removals."""
    try:
        os.utime(data.lock)
    except FileNotFoundError:
        # Removed under this run (a cleanup): the folder's own lock still guards it (see
        # rematch_trace.importing.lock); the name is put back for those who read its time.
        fd = os.open(data.lock, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            os.write(fd, f"{os.getpid()}\n".encode())
        finally:
            os.close(fd)


def _run_started(data: DataDir) -> int:
    """When this run started, on the data folder's own clock: the import lock's mtime."""
    try:
        return os.stat(data.lock).st_mtime_ns
    except OSError:
        return 0


def _record(
    ledger: Ledger, item: WorkItem, outcome: FileOutcome, summary: Summary, conflicts: Conflicts
) -> list[tuple[str, str]]:
    """Write one file's outcome to the ledger and the summary; return the sessions whose outputs may go."""
    path = item.path
    if outcome.ok:
        # What the ledger gave the file when it was handed out. Since then another file of this
        # run may have taken one of its sessions (never given it one): such a session is then
        # "gone" here too, and stays, as its row names that other file (see _commit).
        before = set(item.owned) if item.known else ledger.session_keys_of(as_stored(path))
        kept, replaced = conflicts.kept_sessions(ledger, path, outcome, before)
        for prev in replaced:
            summary.uncount(outcome.harness, bool(prev["flagged"]), orjson.loads(prev["reasons"] or "[]"))
        summary.add(path, outcome, kept)
        # A session captured live keeps its own row (mode 'live'): neither rewritten nor forgotten.
        after = {(outcome.harness or "", s.session_id) for s in kept}
        after |= {(outcome.harness or "", sid) for sid in outcome.kept_live}
        gone = sorted(before - after)
        ledger.record_source(outcome.source_row(path), kept, gone)
        # Only once the ledger no longer names them: a crash before that leaves
        # unreferenced files, never a ledger row without its trace.
        return gone
    from rematch_trace.store.rows import SourceRow

    summary.add(path, outcome)
    try:
        size = stat_of(path)[0]
    except (OSError, RematchError):
        size = 0
    # A failed file keeps the sessions it produced before: nothing is lost. Neither
    # it nor an unclaimed file is remembered as done: the next run looks again
    # (a plugin may have been installed or fixed meanwhile).
    ledger.record_source(SourceRow(path, outcome.harness, size, -1, outcome.outcome, reason=outcome.reason))
    return []


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


__all__ = [
    "SUFFIXES", "FileResult", "ImportSettings", "Interrupted", "Summary", "clean_outputs", "discover",
    "import_locked", "make_executor", "print_problems", "run_import", "settle", "walk",
]
