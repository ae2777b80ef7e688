"""The service's capture writer: one thread applies captures in the order they were queued.

A verdict must not wait behind writing (issue 29): the ``hook_event`` handler
decides, replies, and only then is the call written. The write still has to
land in the session's order (docs/live-capture.md: a later prompt applies the
turn), so its place in the line is taken when the verdict is made
(:meth:`WriteQueue.reserve`) and what goes there is settled once the reply is
sent (:meth:`Job.release`). Everything queued behind a reserved place waits
for it; a place never released is written with its default work after its
time runs out, so a lost callback cannot stop the line.

The jobs hold the hook's payload in memory only, until they are applied.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

Work = Callable[[], object]


class Job:
    """One capture in the line: its work, and whether it may run yet."""

    def __init__(self, work: Work, queue: WriteQueue, until: float | None) -> None:
        self._work = work
        self._queue = queue
        #: Monotonic time after which a reserved place runs its default work (``None``: ready now).
        self.until = until
        self.done = threading.Event()
        #: The exception the work raised, once done.
        self.error: BaseException | None = None

    @property
    def ready(self) -> bool:
        """Whether the job may run (released, or never reserved)."""
        return self.until is None

    def release(self, work: Work | None = None) -> None:
        """Let a reserved job run, with ``work`` in place of its default when given."""
        with self._queue._cond:
            if work is not None:
                self._work = work
            self.until = None
            self._queue._cond.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the job ran; whether it did. Re-raises nothing: read :attr:`error`."""
        return self.done.wait(timeout)


class WriteQueue:
    """A first-in first-out line of captures, applied one at a time by one thread.

    :param on_error: called (on the writer's thread) with a job's exception; it must not raise.
    :param yield_to: while it returns true (verdicts being decided), the writer waits before its
        next job, up to ``max_yield_s`` per job: in one process the writer's work takes the
        interpreter lock from the verdicts, whose deadline is the harness's.
    """

    def __init__(self, on_error: Callable[[BaseException], None] | None = None,
                 yield_to: Callable[[], bool] | None = None, max_yield_s: float = 0.25) -> None:
        self._jobs: deque[Job] = deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._on_error = on_error
        self._yield_to = yield_to
        self._max_yield_s = max_yield_s

    def submit(self, work: Work) -> Job:
        """Queue ``work`` to run after everything queued before it."""
        return self._put(Job(work, self, None))

    def reserve(self, default: Work, hold_s: float) -> Job:
        """Take a place in the line now; it runs once released, or ``default`` after ``hold_s`` seconds."""
        return self._put(Job(default, self, time.monotonic() + hold_s))

    def _put(self, job: Job) -> Job:
        with self._cond:
            self._jobs.append(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="rematch-writer", daemon=True)
                self._thread.start()
            self._cond.notify_all()
        return job

    def drain(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the line to empty; whether it did."""
        end = time.monotonic() + timeout
        with self._cond:
            while self._jobs:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    head = self._jobs[0] if self._jobs else None
                    if head is None:
                        self._cond.wait()
                        continue
                    if head.until is None:
                        break
                    left = head.until - time.monotonic()
                    if left <= 0:  # never released (a lost callback): its default work, not a stuck line
                        break
                    self._cond.wait(left)
                work = head._work
            if self._yield_to is not None:
                end = time.monotonic() + self._max_yield_s
                while self._yield_to() and time.monotonic() < end:
                    time.sleep(0.002)
            try:
                work()
            except BaseException as err:  # one failed capture never stops the line
                head.error = err
                if self._on_error is not None:
                    self._on_error(err)
            with self._cond:
                self._jobs.popleft()
                head.done.set()
                self._cond.notify_all()


__all__ = ["Job", "Work", "WriteQueue"]
