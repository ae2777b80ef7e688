"""The batch import's per-file work on a Dask cluster (``--scheduler``).

:class:`DaskExecutor` is an :class:`~rematch_trace.importing.executor.Executor`
like the local pool: the client (``rematch import``) plans, hands tasks out,
and records every :class:`~rematch_trace.importing.outcome.FileOutcome` in the
ledger, the one writer of it. A task is a list of planned files, cut as the
local pool cuts them (:func:`~rematch_trace.importing.executor.tasks_of`: the
largest files first, each large one alone, small ones together); each runs
:func:`~rematch_trace.importing.worker.import_file` on a worker, which writes
only the data folder's output files (a shared file system, at the same path on
every worker) and returns the outcomes as plain data.

Only a few tasks per worker are submitted at once, so a grown file's saved
state is read (``prepare``) just before its task leaves, and a stop leaves
little queued.

Faults: a worker that dies running a task (killed, out of memory) takes no
file with it. Its task comes back as ``KilledWorker``; every file of it is
submitted again, alone; a file whose task kills a worker a second time is
reported failed, by name. What the dead worker was writing is crash-safe: a
temporary file (swept at the end of the run) or an in-place continuation that
the journal rolls back. The cluster this module starts (``local:N``) lets no
task be retried by Dask itself, so every death reaches the summary, and sends a
worker one task at a time, so a death is charged to the task it ran, not to one
queued behind it; a remote scheduler's ``allowed-failures`` and
``worker-saturation`` settings decide these (see ``docs/distributed.md``).
"""

from __future__ import annotations

import collections
import logging
import os
import re
import signal
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from rematch_trace.errors import RematchError
from rematch_trace.importing.executor import tasks_of
from rematch_trace.importing.outcome import (
    FileOutcome,
    WorkItem,
    failed,
    item_from_wire,
    outcome_from_wire,
    to_wire,
)
from rematch_trace.importing.settings import ImportSettings, Progress

#: Seconds to reach a remote scheduler, and for a local cluster's workers to start.
CONNECT_TIMEOUT = 30
_ONE_TASK_AT_A_TIME = threading.Lock()
_LOCAL = re.compile(r"^local(?::(\d+))?$")


@attrs.frozen
class Scheduler:
    """Where to run: a cluster started here (``local:N``) or a running scheduler's address."""

    address: str | None = None
    local_workers: int = 0

    @property
    def local(self) -> bool:
        """Whether this run starts (and ends) a cluster of its own on this machine."""
        return self.address is None


def parse_scheduler(text: str) -> Scheduler:
    """``local:N``, ``local`` (one worker per core), or a scheduler address (``tcp://host:8786``).

    Raises :class:`RematchError` for anything else.
    """
    m = _LOCAL.match(text.strip())
    if m is not None:
        n = int(m.group(1)) if m.group(1) else (os.cpu_count() or 1)
        if n < 1:
            raise RematchError(f"--scheduler {text}: a local cluster needs at least one worker")
        return Scheduler(local_workers=n)
    if re.match(r"^[a-z]+://[^\s/]+$", text.strip()):
        return Scheduler(address=text.strip())
    raise RematchError(f"--scheduler {text}: expected local:N or a scheduler address such as tcp://host:8786")


def check_reachable(scheduler: Scheduler, seconds: float = 5.0) -> None:
    """Raise :class:`RematchError` at once when a remote scheduler's address takes no connection.

    A refused or unroutable address is said within ``seconds``, before any data folder is made,
    rather than after the client's own connect timeout (:data:`CONNECT_TIMEOUT`).
    """
    import socket
    from urllib.parse import urlsplit

    if scheduler.address is None:
        return
    parts = urlsplit(scheduler.address)
    if parts.scheme not in ("tcp", "tls") or not parts.hostname:
        return  # another transport (ucx, inproc): the client says what is wrong
    try:
        port = parts.port or 8786
        with socket.create_connection((parts.hostname, port), timeout=seconds):
            pass
    except (OSError, ValueError) as err:
        raise RematchError(f"--scheduler {scheduler.address}: cannot connect: {err}") from None


@attrs.define
class WorkerCounts:
    """What one cluster worker did in a run (for ``--json``)."""

    tasks: int = 0
    files: int = 0
    bytes: int = 0
    #: Seconds its tasks ran (on the worker's clock), summed.
    busy_seconds: float = 0.0


def run_task(items: list[dict[str, Any]], settings: ImportSettings, data_root: str) -> dict[str, Any]:
    """A cluster task: import each file of ``items`` (``to_wire`` data), return the outcomes as plain data."""
    from distributed import get_worker

    from rematch_trace.importing.worker import import_file
    from rematch_trace.store.datafolder import reaper
    from rematch_trace.store.journal import journal

    outcomes = []
    # A worker with several threads runs one import task at a time: the process's journal
    # file and plugin host are its own, and the GIL leaves nothing to gain from more.
    with _ONE_TASK_AT_A_TIME:
        started = time.monotonic()
        try:
            for data in items:
                item = item_from_wire(data)
                outcomes.append(to_wire(import_file(item, settings, data_root)))
        finally:
            # A worker outlives the run: its replaced files go now, and its journal file
            # is closed, because the client empties the journal folder when the run ends.
            reaper.drain()
            journal.close()
    worker = get_worker()
    return {"worker": str(worker.name), "outcomes": outcomes, "seconds": time.monotonic() - started}


def installed_versions() -> dict[str, str]:
    """The versions of rematch-trace and of every installed rematch plugin distribution, here."""
    from importlib import metadata

    out = {"rematch-trace": metadata.version("rematch-trace")}
    for ep in metadata.entry_points(group="rematch"):
        dist = ep.dist
        if dist is not None:
            out[dist.name] = dist.version
    return out


def _quiet() -> None:
    # Dask reports a worker's death and restart on its own loggers; the summary says it once.
    if not os.environ.get("REMATCH_DEBUG"):
        for name in ("distributed", "tornado", "bokeh"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
        warnings.filterwarnings("ignore", module=r"distributed\.")


@attrs.define
class _Task:
    items: list[WorkItem]
    #: 1 on the first submission, 2 when retried after a worker died running it.
    attempt: int = 1


class DaskExecutor:
    """Runs the per-file imports on a Dask cluster; see the module docstring."""

    #: Tasks submitted per worker ahead of the one it runs, so no worker waits on the client.
    AHEAD = 2

    def __init__(
        self, settings: ImportSettings, data_root: str, scheduler: Scheduler, progress: Progress | None = None
    ) -> None:
        self.settings = settings
        self.data_root = data_root
        self.scheduler = scheduler
        self.progress = progress
        #: One line per worker death met, for the summary.
        self.deaths: list[str] = []
        #: Worker name -> what it did.
        self.workers: dict[str, WorkerCounts] = {}
        self._stopping = False
        self._client: Any = None
        self._cluster: Any = None

    # -- connecting ------------------------------------------------------------------------

    def _connect(self) -> Any:
        try:
            import dask
            from distributed import Client, LocalCluster
        except ImportError:
            raise RematchError("--scheduler needs the Python package dask[distributed]: install rematch again "
                              "from its checkout (pip install ./), or pip install 'dask[distributed]'") from None
        _quiet()
        if self.scheduler.local:
            # Every worker death reaches this client (see the module docstring), and only the
            # task a worker runs is charged with its death: a worker is sent one task at a
            # time (a task queued behind it would die with it too). Workers listen on
            # loopback only, with no dashboard.
            config = {"distributed.scheduler.allowed-failures": 0, "distributed.scheduler.worker-saturation": 1.0}
            try:
                with dask.config.set(config):
                    self._cluster = LocalCluster(
                        n_workers=self.scheduler.local_workers, threads_per_worker=1, processes=True,
                        host="127.0.0.1", dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL,
                    )
                client = Client(self._cluster, timeout=CONNECT_TIMEOUT)
            except Exception as err:
                self._close()
                raise RematchError(f"--scheduler local:{self.scheduler.local_workers}: the cluster did not start: {err}") from None
        else:
            try:
                client = Client(self.scheduler.address, timeout=CONNECT_TIMEOUT)
            except OSError as err:
                raise RematchError(f"--scheduler {self.scheduler.address}: cannot connect: {err}") from None
            self._client = client
            try:
                versions = client.run(installed_versions)
            except Exception as err:
                self._close()
                raise RematchError(f"--scheduler {self.scheduler.address}: the workers did not answer: {err}") from None
            mine = installed_versions()
            odd = sorted(w for w, v in versions.items() if v != mine)
            if odd:
                self._close()
                raise RematchError(
                    f"--scheduler {self.scheduler.address}: {len(odd)} worker(s) run other versions of rematch or its "
                    f"plugins than this client ({', '.join(odd[:3])}): outputs would differ; install the same everywhere"
                )
        self._client = client
        return client

    def _close(self) -> None:
        client, cluster = self._client, self._cluster
        self._client = self._cluster = None
        if client is not None:
            try:
                client.close(timeout=5)
            except Exception:
                pass  # a scheduler already gone: nothing is left to close
        if cluster is not None:
            try:
                cluster.close(timeout=5)
            except Exception:
                self._kill(cluster)  # workers the close did not end in time

    # -- the run ---------------------------------------------------------------------------

    def run(self, items: list[WorkItem], prepare: Callable[[WorkItem], WorkItem]) -> Iterator[tuple[WorkItem, FileOutcome]]:
        """Import ``items`` on the cluster; yield each outcome as its task ends."""
        if not items:
            return
        from distributed import KilledWorker, as_completed

        queue: collections.deque[_Task] = collections.deque(_Task(t) for t in tasks_of(items))
        client = self._connect()
        total, done = len(items), 0
        inflight: dict[Any, _Task] = {}
        futures = as_completed()
        try:
            def fill() -> None:
                # Threads of the workers the client knows of now (a cluster may grow while it runs).
                slots = sum(int(w.get("nthreads", 1)) for w in client.scheduler_info().get("workers", {}).values())
                while queue and len(inflight) < max(1, slots) * self.AHEAD and not self._stopping:
                    task = queue.popleft()
                    if task.attempt == 1:
                        task.items = [prepare(i) for i in task.items]
                    future = client.submit(
                        run_task, [to_wire(i) for i in task.items], self.settings, self.data_root,
                        key=f"rematch-import-{uuid.uuid4().hex}", pure=False,
                    )
                    inflight[future] = task
                    futures.add(future)

            fill()
            for future in futures:
                task = inflight.pop(future)
                result = future.result() if future.status == "finished" else None
                if not (isinstance(result, dict) and len(result.get("outcomes", ())) == len(task.items)):
                    result = None
                if result is not None:
                    counts = self.workers.setdefault(result["worker"], WorkerCounts())
                    counts.tasks += 1
                    counts.busy_seconds += float(result["seconds"])
                    for item, data in zip(task.items, result["outcomes"], strict=True):
                        counts.files += 1
                        counts.bytes += item.work
                        done += 1
                        yield item, outcome_from_wire(data)
                else:
                    error = future.exception() if future.status == "error" else None
                    for item, outcome in self._failed_task(task, error, isinstance(error, KilledWorker), queue):
                        done += 1
                        yield item, outcome
                del future
                if self.progress:
                    self.progress(done, total)
                if self._stopping and self.scheduler.local:
                    # Its workers are gone (see stop): what had finished is still recorded.
                    for other, rest in list(inflight.items()):
                        if other.status == "finished":
                            del inflight[other]
                            for item, data in zip(rest.items, other.result()["outcomes"], strict=True):
                                yield item, outcome_from_wire(data)
                    return
                fill()
        finally:
            if inflight:
                try:
                    client.cancel(list(inflight))
                except Exception:
                    pass
            inflight.clear()
            self._close()

    def _failed_task(
        self, task: _Task, error: BaseException | None, killed: bool, queue: collections.deque[_Task]
    ) -> Iterator[tuple[WorkItem, FileOutcome]]:
        """A task that did not return: a dead worker's files are retried alone, once; other errors fail them.

        Which file of a task the worker was on is not known for sure (a worker's
        last messages may die with it), so each is retried in a task of its own;
        one that kills a worker again is the culprit, reported failed. The files
        it had finished go again too: their outcomes died with the worker.
        """
        if not killed:
            why = f"{type(error).__name__}: {error}" if error is not None else "no readable answer"
            reason = f"the cluster lost the task: {why}"
            for item in task.items:
                yield item, failed(reason)
            return
        if self._stopping:
            return  # not recorded: the next run imports them
        if task.attempt >= 2:
            self.deaths.append(f"a worker died importing {task.items[0].path} again: not retried")
            yield task.items[0], failed("its import killed a cluster worker twice")
            return
        if len(task.items) == 1:
            self.deaths.append(f"a worker died importing {task.items[0].path}: retried")
        else:
            names = ", ".join(i.path for i in task.items)
            self.deaths.append(f"a worker died running a task of {len(task.items)} files, each retried alone: {names}")
        for item in reversed(task.items):
            queue.appendleft(_Task([item], attempt=2))

    def stop(self) -> None:
        """Ask the run to end: nothing more is submitted.

        A local cluster is closed at once, ending what its workers were running
        (crash-safe, as after a kill); a remote cluster's running tasks end on
        their own and are still recorded (Dask cannot interrupt a running task).
        """
        self._stopping = True
        if self.scheduler.local:
            self.kill()

    def kill(self) -> None:
        """End the workers of a cluster this run started, now (a remote cluster is left running)."""
        if self._cluster is not None:
            self._kill(self._cluster)

    @staticmethod
    def _kill(cluster: Any) -> None:
        # The worker processes are this process's children, each behind its nanny. A nanny
        # restarts a worker that dies unless told the cluster is closing (Dask's own shutdown
        # signal, `close_gracefully`): without it the close waits for workers it just restarted.
        for nanny in list(getattr(cluster, "workers", {}).values()):
            closing = getattr(nanny, "close_gracefully", None)
            if callable(closing):
                try:
                    closing(reason="rematch: the run is stopping")
                except Exception:
                    pass  # an older or newer Dask: the kill below still ends the worker
            proc = getattr(getattr(nanny, "process", None), "process", None)
            pid = getattr(proc, "pid", None)
            if isinstance(pid, int):
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def report(self) -> dict[str, dict[str, Any]]:
        """Per-worker counts, for the summary."""
        return {
            name: {"tasks": c.tasks, "files": c.files, "bytes": c.bytes, "busy_seconds": round(c.busy_seconds, 3)}
            for name, c in sorted(self.workers.items())
        }
