"""The watcher: the import lock for its lifetime, one continuation per file per burst of writes.

1. It takes the data folder's import lock (naming itself, so ``rematch
   import`` is told who holds the folder) and keeps it until it stops.
2. It catches up: the batch import's locked body over every watched file,
   with the worker pool (a killed watcher's half-done continuation is settled
   here first, by the journal, as any import settles it).
3. It watches the roots with watchfiles (inotify, FSEvents, kqueue; polling
   where those are missing, or with ``--poll``). Right after the watch begins
   it looks at every file once more, for what changed during the catch-up.
4. Each burst of changes (writes grouped until they pause for ``step_ms``,
   at most ``debounce_ms``) becomes one list of files, each once, imported in
   this process by the same locked body: a grown file is continued from its
   offset, a truncated or replaced one imported whole, a half-written last
   line left for the next burst (the reader does not consume it).
5. A root that does not exist yet (a harness never run) is looked for every
   ``tick_ms``; when one appears or goes, the watch restarts with a rescan.

Ctrl-C or SIGTERM stops it: between bursts at once; during an import the
batch's own handling finishes or rolls back the file in hand. Nothing grows
with time: each burst's summary is dropped once reported, and the ledger
stays open on disk, not in memory.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import attrs

from rematch_trace.errors import RematchError
from rematch_trace.importing.batch import clean_outputs, import_locked
from rematch_trace.importing.discovery import claimable, discover
from rematch_trace.importing.lock import WATCH, ImportLock
from rematch_trace.importing.reader import TRUNCATED_TAIL, require_c_backend
from rematch_trace.importing.settings import ImportSettings
from rematch_trace.importing.summary import Summary
from rematch_trace.importing.worker import worker_host
from rematch_trace.store.datafolder import DataDir, reaper
from rematch_trace.store.ledger import Ledger, as_stored
from rematch_trace.watch.changed import files_of, wanted
from rematch_trace.watch.roots import Roots
from rematch_trace.watch.status import Status

#: How long a file changed of late is looked at again when polling (the poller sees whole seconds).
RECENT_SECONDS = 2.5


@attrs.frozen
class WatchSettings:
    """How the watcher imports (``imports.jobs`` is for the catch-up only) and how it watches."""

    imports: ImportSettings = attrs.field(factory=ImportSettings)
    #: ``True``: poll; ``None``: watchfiles decides (``WATCHFILES_FORCE_POLLING``, WSL).
    force_polling: bool | None = None
    #: A burst ends when writes pause this long...
    step_ms: int = 50
    #: ...or has lasted this long (the latency target is 1 s from write to ledger row).
    debounce_ms: int = 400
    #: How often missing roots are looked for.
    tick_ms: int = 500


def load_watchfiles() -> Any:
    """The watchfiles module, or a one-line error saying how to install it."""
    try:
        import watchfiles
    except ImportError:
        raise RematchError("rematch watch needs the Python package watchfiles: install rematch again "
                          "from its checkout (pip install ./), or pip install watchfiles") from None
    return watchfiles


class Watcher:
    """``rematch watch``: see the module docstring."""

    def __init__(self, data: DataDir, paths: list[Path], settings: WatchSettings, status: Status) -> None:
        self.data = data
        self.paths = paths
        self.settings = settings
        self.status = status
        self.stop_event = threading.Event()
        #: The signal that stopped the watch.
        self.signum: int | None = None
        self.polling = settings.force_polling
        self._one = attrs.evolve(settings.imports, jobs=1)
        self._roots: Roots | None = None
        #: Polling only: path -> when it last changed (see :meth:`_recheck`).
        self._recent: dict[str, float] = {}

    # -- running ---------------------------------------------------------------------------

    def run(self) -> int | None:
        """Catch up, then follow every change until a signal; return that signal."""
        require_c_backend()
        watchfiles = load_watchfiles()
        if self.paths and not any(os.path.lexists(p) for p in self.paths):
            raise RematchError(f"no such file or folder: {', '.join(str(p) for p in self.paths)}")
        roots = self._roots = Roots.of(worker_host(), self.paths)
        if not roots.roots:
            raise RematchError("nothing to watch: no plugin names a default location; name the folders to watch")
        self.data.ensure()
        with ImportLock(self.data.lock, WATCH), Ledger(self.data.ledger) as ledger, self._signals():
            clean_outputs(self.data)
            self._catch_up(ledger)
            if not self.stop_event.is_set():
                self._follow(watchfiles, roots, ledger)
            reaper.drain()
        self.status.close()
        return self.signum

    @contextlib.contextmanager
    def _signals(self) -> Iterator[None]:
        """SIGINT and SIGTERM stop the watch; a second one ends the process at once."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handle(signum: int, frame: FrameType | None) -> None:
            if self.signum is not None:
                # Between imports nothing is half-written; the kernel releases the lock.
                os._exit(128 + signum)
            self.signum = signum
            self.stop_event.set()

        old = {s: signal.signal(s, handle) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for s, h in old.items():
                signal.signal(s, h)

    def _catch_up(self, ledger: Ledger) -> None:
        """Import whatever changed while nobody watched, with the worker pool."""
        assert self._roots is not None
        settings = self.settings.imports
        summary = import_locked(discover(worker_host(), list(self.paths)), self.data, settings, ledger=ledger)
        reaper.drain()
        if settings.jobs > 1:
            clean_outputs(self.data)
        files = summary.counts
        self.status.message(
            f"caught up: {summary.sessions_imported} sessions from {files['imported'] + files['resumed']} files "
            f"({files['resumed']} continued), {files['unchanged']} unchanged, {files['skipped']} skipped, "
            f"{files['failed']} failed"
        )
        self._after(summary, ledger, lag=False, skipped=True)

    def _follow(self, watchfiles: Any, roots: Roots, ledger: Ledger) -> None:
        """Watch the roots that exist, restarting when that set changes, until stopped."""
        missing_said = False
        while not self.stop_event.is_set():
            state = roots.state()
            existing = tuple(path for path, _ in state)
            if not existing:
                if not missing_said:
                    where = ", ".join(str(r.path) for r in roots.roots)
                    self.status.message(f"none of the watched folders exists yet ({where}); waiting for one")
                    missing_said = True
                self.stop_event.wait(self.settings.tick_ms / 1000)
                continue
            missing_said = False
            self.status.message(
                f"watching {len(existing)} of {len(roots.roots)} locations "
                f"({'polling' if self.polling else 'file system events'}) into {self.data.root}"
            )
            try:
                self._watch(watchfiles, roots, state, ledger)
            except FileNotFoundError:
                self.stop_event.wait(self.settings.tick_ms / 1000)  # a root went as the watch began
            except OSError as err:
                if self.polling:
                    raise RematchError(f"cannot watch {', '.join(map(str, existing))}: {err}") from None
                # inotify's watch limit (fs.inotify.max_user_watches), a file system without events.
                self.status.message(f"file system events unavailable ({err}); polling instead")
                self.polling = True

    def _watch(self, watchfiles: Any, roots: Roots, state: tuple[tuple[Path, int], ...], ledger: Ledger) -> None:
        """One watch over the roots of ``state``; returns when stopped or when that state changes."""
        data_root = os.path.abspath(self.data.root)
        suffixes = worker_host().suffixes()
        changes_of = watchfiles.watch(
            *(path for path, _ in state),
            watch_filter=wanted(data_root, suffixes, bool(worker_host().source_names())),
            debounce=self.settings.debounce_ms,
            step=self.settings.step_ms,
            stop_event=self.stop_event,
            rust_timeout=self.settings.tick_ms,
            yield_on_timeout=True,
            raise_interrupt=False,
            force_polling=self.polling,
            ignore_permission_denied=True,
        )
        deleted = int(watchfiles.Change.deleted)
        first = True
        try:
            for changes in changes_of:
                if first:
                    # The watch is in place: whatever changed before it began is found by a rescan.
                    first = False
                    self._import(discover(worker_host(), list(self.paths)), ledger, lag=False)
                    continue
                found = files_of(((int(c), p) for c, p in changes), roots, data_root, deleted, worker_host(),
                                 suffixes)
                found = [(p, h) for p, h in found if claimable(worker_host(), p, h)]
                if self.polling:
                    found = self._recheck(found, roots, ledger)
                if found:
                    self._import(found, ledger, lag=True)
                if self.stop_event.is_set() or roots.state() != state:
                    return
        finally:
            changes_of.close()

    def _recheck(
        self, found: list[tuple[str, str | None]], roots: Roots, ledger: Ledger
    ) -> list[tuple[str, str | None]]:
        """``found``, and the files changed of late whose ledger row no longer matches them.

        The polling watcher compares modification times to the second, so a write
        in the same second as the one before it raises no event; the files written
        within :data:`RECENT_SECONDS` are looked at again on each tick (a stat and
        a ledger row each) until that second is surely past.
        """
        now = time.monotonic()
        for file, _ in found:
            self._recent[str(file)] = now
        for name, seen in list(self._recent.items()):
            if now - seen > RECENT_SECONDS:
                del self._recent[name]
        named = {str(file) for file, _ in found}
        extra = []
        for name in self._recent:
            if name in named:
                continue
            try:
                st = os.stat(name)
            except OSError:
                continue
            row = ledger.source_brief(as_stored(name))
            if row is None or (row["size"], row["mtime_ns"]) != (st.st_size, st.st_mtime_ns):
                extra.append((name, roots.hint_of(name)))
        return sorted(found + extra) if extra else found

    # -- one burst -------------------------------------------------------------------------

    def _import(self, found: list[tuple[str, str | None]], ledger: Ledger, *, lag: bool) -> None:
        summary = import_locked(found, self.data, self._one, ledger=ledger)
        if summary.count("imported") + summary.count("resumed") and summary.interrupted is None:
            from rematch_trace.importing import search_sources  # noqa: F401  (the index sync's reader of sources)
            from rematch_trace.report.follow import follow_outputs

            follow_outputs(self.data)  # stored summaries and the search index follow
        self._after(summary, ledger, lag=lag, skipped=False)

    def _after(self, summary: Summary, ledger: Ledger, *, lag: bool, skipped: bool) -> None:
        """Report a run's problems and update the status; a signal during it stops the watch."""
        assert self._roots is not None
        for f in summary.files:
            for p in f.problems:
                if not p.endswith(TRUNCATED_TAIL):  # a line being written: the next burst reads it
                    self.status.message(p)
            if f.outcome == "failed":
                self.status.message(f"{f.path}: failed: {f.reason}")
            elif f.outcome == "skipped" and (skipped or _complete(f.path)):
                # A file still being started (no whole first line) is not news.
                self.status.message(f"{f.path}: skipped: {f.reason}")
        for line in summary.worker_deaths:
            self.status.message(line)
        figures = self.status.figures
        done = [f.path for f in summary.files if f.outcome in ("imported", "resumed")]
        if done:
            figures.last_at = time.time()
            figures.last_files = len(done)
            figures.lag = _lag(done, figures.last_at) if lag else None
        figures.followed = ledger.imported_under(self._roots.prefixes())
        figures.sessions, figures.flagged = summary.sessions_total, summary.flagged_total
        if summary.count("imported") + summary.count("resumed") + summary.count("failed") or not lag:
            self.status.update()
        if summary.interrupted is not None:
            self.signum = summary.interrupted
            self.stop_event.set()


def _lag(paths: list[str], now: float) -> float | None:
    """Seconds from the newest write of ``paths`` to ``now``."""
    newest = 0.0
    for p in paths:
        try:
            newest = max(newest, os.stat(p).st_mtime)
        except OSError:
            continue
    return max(0.0, now - newest) if newest else None


def _complete(path: str) -> bool:
    """Whether a non-empty file ends with a newline (its lines are whole)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() == 0:
                return False
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"\n"
    except OSError:
        return False
