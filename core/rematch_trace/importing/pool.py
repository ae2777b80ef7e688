"""The local executors (see :mod:`rematch_trace.importing.executor`).

:class:`InProcess` imports in this process; :class:`LocalPool` in worker
processes of its own:

- workers die with their parent (``PR_SET_PDEATHSIG`` on Linux, a watchdog
  thread elsewhere), so a killed ``rematch`` leaves no worker holding the lock;
- a worker that dies (the OOM killer, ``kill``) is replaced, and the files it
  held are handed out again; the file it was importing is retried once, alone,
  and reported as failed, by name, if it kills a second worker;
- :meth:`Executor.stop` ends the run within about a second: workers are
  terminated (what they were writing is crash-safe: a temporary file, or an
  in-place continuation the journal rolls back), and the outcomes they had
  already sent are still yielded, so finished work is recorded.

A run with nothing to import (an unchanged rerun) loads neither
:mod:`multiprocessing` nor the per-file import, nor the outcomes' wire format:
each is imported when a worker is started or a file is imported.
"""

from __future__ import annotations

import collections
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from rematch_trace.importing.executor import tasks_of
from rematch_trace.importing.settings import ImportSettings, Progress

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from rematch_trace.importing.outcome import FileOutcome, WorkItem

#: How long terminated workers get to exit before they are killed.
STOP_GRACE = 0.5


class InProcess:
    """Imports in this process, one file after another."""

    def __init__(self, settings: ImportSettings, data_root: str, progress: Progress | None = None) -> None:
        self.settings = settings
        self.data_root = data_root
        self.progress = progress
        self._stopping = False
        self._busy = False
        self.deaths: list[str] = []

    def run(self, items: list[WorkItem], prepare: Callable[[WorkItem], WorkItem]) -> Iterator[tuple[WorkItem, FileOutcome]]:
        """Import ``items`` in order (consumed: each is freed once its outcome is in)."""
        total = len(items)
        items.reverse()
        for n in range(1, total + 1):
            if self._stopping:
                return
            item = prepare(items.pop())
            self._busy = True
            try:
                outcome = import_file(item, self.settings, self.data_root)
            finally:
                self._busy = False
            yield item, outcome
            if self.progress:
                self.progress(n, total)

    def stop(self) -> None:
        """Stop after the file being imported; the signal handler interrupts it (see :meth:`abortable`)."""
        self._stopping = True

    @property
    def abortable(self) -> bool:
        """Whether a file's import is running, and may be interrupted where it stands."""
        return self._busy

    def kill(self) -> None:
        """Nothing to kill: there are no workers."""


class _Worker:
    def __init__(self, proc: Any, conn: Connection) -> None:
        self.proc = proc
        self.conn = conn
        #: Files handed out and not yet reported, in the order the worker imports them.
        self.outstanding: collections.deque[WorkItem] = collections.deque()
        self.tasks = 0
        #: Told to exit (no work was left): it takes no more tasks, though it may not have exited yet.
        self.retired = False


class LocalPool:
    """Worker processes of this run (forked: they start with the plugins already loaded)."""

    #: Tasks handed to a worker ahead of the one it is on, so it never waits for the parent.
    AHEAD = 2

    def __init__(self, settings: ImportSettings, data_root: str, progress: Progress | None = None) -> None:
        self.settings = settings
        self.data_root = data_root
        self.progress = progress
        self.workers: list[_Worker] = []
        self._stopping = False
        #: Files whose import killed a worker: path -> how many.
        self.kills: dict[str, int] = {}
        #: One line per worker that died, for the summary.
        self.deaths: list[str] = []

    # -- the worker process ----------------------------------------------------------------

    def _start(self) -> _Worker:
        # Imported here, before the fork, so no worker imports them again for itself (ctypes: each
        # worker asks to die with its parent, see _die_with_parent).
        import ctypes  # noqa: F401
        import multiprocessing

        import rematch_trace.importing.worker  # noqa: F401

        ctx = multiprocessing.get_context("fork")
        parent_end, child_end = ctx.Pipe(duplex=True)
        proc = ctx.Process(
            target=_worker_main, args=(child_end, self.settings, self.data_root, os.getpid()), daemon=True,
            name="rematch-worker",
        )
        proc.start()
        child_end.close()
        worker = _Worker(proc, parent_end)
        self.workers.append(worker)
        return worker

    # -- the parent ------------------------------------------------------------------------

    def start(self) -> None:
        """Fork the workers now, while this process is small.

        A forked worker's resident set starts as its parent's: forked after the
        planning of 100,000 files, each worker would carry that planning's memory.
        """
        if not self.workers:
            for _ in range(self.settings.jobs):
                self._start()

    def run(self, items: list[WorkItem], prepare: Callable[[WorkItem], WorkItem]) -> Iterator[tuple[WorkItem, FileOutcome]]:
        """Import ``items`` in the workers; yield each outcome as it arrives."""
        queue: collections.deque[list[WorkItem]] = collections.deque(tasks_of(items))
        total = len(items)
        # Consumed: a task's items are freed once their outcomes are in (100,000 files' items
        # would otherwise stay to the end, beside the summary the outcomes fill).
        items.clear()
        done = 0
        if not queue:
            return
        from rematch_trace.importing.outcome import pack

        waiter = _Waiter()

        if not self.workers:
            from rematch_trace.importing.worker import warm

            # Forked now, after planning: loaded once here, not by each worker for itself.
            try:
                warm(self.settings)
            except Exception:
                pass  # then each worker loads it for itself, and a failure costs its files, said by name
            for _ in range(min(self.settings.jobs, len(queue))):
                self._start()
        try:
            while self.workers:
                if self._stopping:
                    yield from self._wind_down()
                    return
                # In rounds, one task per worker a round: handed out worker by worker, the
                # first worker would take the two largest files and the other the rest,
                # finishing long before it (the tasks come largest first).
                for depth in range(1, self.AHEAD + 1):
                    for worker in self.workers:
                        if queue and worker.tasks < depth and not worker.retired and worker.proc.is_alive():
                            task = [prepare(i) for i in queue.popleft()]
                            try:
                                worker.conn.send([pack(i) for i in task])
                            except OSError:
                                queue.appendleft(task)  # it died: its death is handled below
                                continue
                            worker.outstanding.extend(task)
                            worker.tasks += 1
                for worker in list(self.workers):
                    if not queue and not worker.outstanding and not worker.retired:
                        self._retire(worker)
                ready = waiter.wait([w.conn for w in self.workers] + [w.proc.sentinel for w in self.workers], 0.2)
                for worker in list(self.workers):
                    if worker.conn in ready:
                        for item, outcome in self._drain(worker):
                            done += 1
                            yield item, outcome
                            if self.progress:
                                self.progress(done, total)
                    if worker.proc.sentinel in ready or not worker.proc.is_alive():
                        for item, outcome in self._drain(worker):
                            done += 1
                            yield item, outcome
                        if worker.outstanding or worker.proc.exitcode not in (0, None):
                            lost = self._buried(worker, queue)
                            if lost is not None:
                                done += 1
                                yield lost
                        else:
                            self._forget(worker)
                        if queue and not self._stopping and sum(not w.retired for w in self.workers) < self.settings.jobs:
                            self._start()
                    if self.progress and done:
                        self.progress(done, total)
        finally:
            self.kill()

    def _drain(self, worker: _Worker) -> Iterator[tuple[WorkItem, FileOutcome]]:
        """Every complete message the worker has sent."""
        from rematch_trace.importing.outcome import unpack_outcome

        while True:
            try:
                if not worker.conn.poll():
                    return
                message = worker.conn.recv()
            except (EOFError, OSError):
                return
            if message == "task-done":
                worker.tasks -= 1
                continue
            path, data = message
            item = worker.outstanding.popleft()
            assert item.path == path, (item.path, path)
            yield item, unpack_outcome(data)

    def _buried(self, worker: _Worker, queue: collections.deque[list[WorkItem]]) -> tuple[WorkItem, FileOutcome] | None:
        """A worker died: hand its files out again; the one it was on is retried alone, once."""
        worker.proc.join()
        code = worker.proc.exitcode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        self._forget(worker)
        if not worker.outstanding:
            return None
        current = worker.outstanding.popleft()
        rest = list(worker.outstanding)
        worker.outstanding.clear()
        if rest:
            queue.appendleft(rest)
        kills = self.kills[current.path] = self.kills.get(current.path, 0) + 1
        if self._stopping:
            return None
        if kills >= 2:
            from rematch_trace.importing.outcome import failed

            self.deaths.append(f"a worker died ({how}) importing {current.path} again: not retried")
            return current, failed(f"its import killed a worker twice ({how})")
        self.deaths.append(f"a worker died ({how}) importing {current.path}: retried")
        queue.appendleft([current])
        return None

    def _forget(self, worker: _Worker) -> None:
        if worker in self.workers:
            self.workers.remove(worker)
        worker.conn.close()

    def _retire(self, worker: _Worker) -> None:
        # Once: a retired worker is never handed a task again. A task sent behind its "exit"
        # (a file of a dead worker, handed out again) would end with it unread, and its clean
        # exit would count as a death of that file.
        worker.retired = True
        try:
            worker.conn.send(None)
        except OSError:
            pass

    def _wind_down(self) -> Iterator[tuple[WorkItem, FileOutcome]]:
        """Terminate every worker, then yield what they had finished and sent."""
        for worker in self.workers:
            _signal(worker.proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE
        for worker in self.workers:
            worker.proc.join(max(0.0, deadline - time.monotonic()))
        self.kill()
        for worker in list(self.workers):
            yield from self._drain(worker)
            self._forget(worker)

    def stop(self) -> None:
        """Ask the run to end: no more files are handed out, workers are terminated."""
        self._stopping = True

    def kill(self) -> None:
        """SIGKILL every worker still alive and reap it."""
        for worker in self.workers:
            if worker.proc.is_alive():
                _signal(worker.proc.pid, signal.SIGKILL)
        for worker in self.workers:
            worker.proc.join()


class _Waiter:
    """Waits for the workers' pipes and sentinels, with one ``poll`` object kept while they stay the same.

    :func:`multiprocessing.connection.wait` builds and fills a selector for every call: the
    parent waits once or twice per file it is handed back, and a rerun of small files
    hands back thousands a second.
    """

    def __init__(self) -> None:
        self._objects: list[Any] = []
        self._poll: Any = None
        self._by_fd: dict[int, Any] = {}

    def wait(self, objects: list[Any], timeout: float) -> list[Any]:
        """The ``objects`` (connections, or sentinels: file descriptors) ready to read, or gone."""
        import select

        if self._poll is None or objects != self._objects:
            self._poll = select.poll()
            self._by_fd = {}
            for obj in objects:
                fd = obj if isinstance(obj, int) else obj.fileno()
                self._by_fd[fd] = obj
                self._poll.register(fd, select.POLLIN)
            self._objects = list(objects)
        # (POLLHUP and POLLERR come whether asked for or not: a dead worker's pipe is "ready".)
        return [self._by_fd[fd] for fd, _events in self._poll.poll(timeout * 1000) if fd in self._by_fd]


def import_file(item: WorkItem, settings: ImportSettings, data_root: str) -> FileOutcome:
    """One file's import (:func:`rematch_trace.importing.worker.import_file`), its module loaded on first use."""
    from rematch_trace.importing.worker import import_file as run

    return run(item, settings, data_root)


def _signal(pid: int | None, signum: int) -> None:
    if pid is None:
        return
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _die_with_parent(parent: int) -> None:
    """Make this process die when ``parent`` does (kill -9 of the parent included)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        if libc.prctl(pr_set_pdeathsig, signal.SIGKILL) != 0:
            raise OSError(ctypes.get_errno(), "prctl")
    except (OSError, AttributeError):
        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, name="rematch-parent-watch", daemon=True).start()
    # The parent may have died before prctl took effect.
    if os.getppid() != parent:
        os._exit(1)


def _worker_main(conn: Connection, settings: ImportSettings, data_root: str, parent: int) -> None:
    _die_with_parent(parent)
    # Ctrl-C reaches the whole foreground group: stopping is the parent's decision.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    import queue

    from rematch_trace.importing.outcome import pack, unpack_item
    from rematch_trace.store.datafolder import reaper

    # Tasks are received by a thread of their own, always: were this process to block
    # sending an outcome while the parent blocks handing it a task, neither would go on.
    inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def receive() -> None:
        while True:
            try:
                task = conn.recv()
            except (EOFError, OSError):
                task = None
            inbox.put(task)
            if task is None:
                return

    threading.Thread(target=receive, name="rematch-worker-inbox", daemon=True).start()
    try:
        while True:
            task = inbox.get()
            if task is None:
                break
            for data in task:
                item = unpack_item(data)
                outcome = import_file(item, settings, data_root)
                conn.send((item.path, pack(outcome)))
            conn.send("task-done")
    finally:
        reaper.drain()
        sys.stdout.flush()
