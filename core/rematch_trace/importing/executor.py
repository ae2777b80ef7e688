"""The executor interface: where the per-file imports of a batch run.

Every executor takes the planned work items (the most work first) and
yields ``(item, FileOutcome)`` as each file ends; the batch import, the one
ledger writer, records them. :mod:`rematch_trace.importing.pool` has the
local ones (this process, or worker processes of the run); another engine
(a cluster) implements the same three methods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rematch_trace.importing.outcome import FileOutcome, WorkItem

#: A task takes files until it holds this many, or this many bytes to read:
#: one task per small file would leave the workers waiting on the parent to hand out work.
TASK_FILES = 32
TASK_BYTES = 2 << 20


class Interrupted(KeyboardInterrupt):
    """The run was asked to stop (Ctrl-C, SIGTERM); carries the signal number."""

    def __init__(self, signum: int, summary: Any = None) -> None:
        super().__init__(signum)
        self.signum = signum
        #: What the run did before it stopped (a :class:`~rematch_trace.importing.summary.Summary`), when known.
        self.summary = summary


class Executor(Protocol):
    """Runs per-file imports; see the module docstring."""

    #: One line per worker that died during the run (for the summary).
    deaths: list[str]

    def run(self, items: list[WorkItem], prepare: Callable[[WorkItem], WorkItem]) -> Iterator[tuple[WorkItem, FileOutcome]]:
        """Import ``items`` (each passed through ``prepare`` just before it is handed out); the list
        may be consumed as the work goes (the local executors empty it)."""

    def stop(self) -> None:
        """Ask the run to end soon; safe to call from a signal handler."""

    def kill(self) -> None:
        """End every worker now and reap it; safe to call from a signal handler."""


def tasks_of(items: list[WorkItem]) -> list[list[WorkItem]]:
    """``items`` cut into worker tasks (see :data:`TASK_FILES`)."""
    out: list[list[WorkItem]] = []
    task: list[WorkItem] = []
    work = 0
    for item in items:
        task.append(item)
        work += item.work
        if len(task) >= TASK_FILES or work >= TASK_BYTES:
            out.append(task)
            task, work = [], 0
    if task:
        out.append(task)
    return out
