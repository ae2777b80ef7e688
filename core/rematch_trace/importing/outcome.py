"""What a file's import produced, typed: it crosses from a worker to the ledger writer.

A worker (a local process, or a remote one) returns a :class:`FileOutcome`;
the one process that writes the ledger records it. Across a process boundary
it travels as plain data through :data:`converter` (``to_wire`` /
``from_wire``), so any executor can carry it.
"""

from __future__ import annotations

import functools
import operator
from typing import Any, Literal

import attrs

from rematch_trace.store.claims import Conflict
from rematch_trace.store.rows import SessionRow, SourceRow
from rematch_trace.store.search_rows import HandedTrace

#: How a file ended: read whole, continued from where the last run stopped,
#: not claimed by any plugin, or failed (reason given).
Outcome = Literal["imported", "resumed", "skipped", "failed"]


@attrs.frozen(slots=True)
class FileOutcome:
    """The outcome of one source file, as a worker returns it."""

    outcome: Outcome
    harness: str | None = None
    reason: str | None = None
    sessions: list[SessionRow] = attrs.field(factory=list)
    #: Sessions the file holds that were captured live: their live trace and row stay as they are.
    kept_live: list[str] = attrs.field(factory=list)
    problems: list[str] = attrs.field(factory=list)
    problem_count: int = 0
    skipped_lines: int = 0
    malformed: int = 0
    #: Where reading stopped, the fingerprints of what was read, the state to continue from.
    offset: int = 0
    head_fp: str | None = None
    tail_fp: str | None = None
    saved: bytes | None = None
    size: int = 0
    mtime_ns: int = -1
    #: Plugins left out of a hook (they raised) while this process imported: said once per run.
    plugin_failures: list[str] = attrs.field(factory=list)
    #: Sessions another file also names (see :mod:`rematch_trace.store.claims`).
    conflicts: list[Conflict] = attrs.field(factory=list)
    #: Session id -> the identity of the trace this import committed (inode, size, mtime).
    stamps: dict[str, tuple[int, int, int]] = attrs.field(factory=dict)
    #: The search index's rows of what this import read of the file (``ImportSettings.search_rows``):
    #: (offset read from, offset past the last record, rows, plugin failed); see store/search_index.py.
    said: tuple[int, int, list[tuple[str, str, str | None, int | None, str]], bool] | None = None
    #: Trace key -> the search index's rows of the lines this import wrote to that trace
    #: (``ImportSettings.search_rows``; see store/search_rows.py).
    traces: dict[str, HandedTrace] | None = None

    @property
    def ok(self) -> bool:
        """Whether the file was imported (whole or continued)."""
        return self.outcome in ("imported", "resumed")

    def source_row(self, path: str) -> SourceRow:
        """The ledger row of the source this outcome is of."""
        return SourceRow(
            path, self.harness, self.size, self.mtime_ns, self.outcome, self.head_fp, self.tail_fp, self.offset,
            self.reason, self.malformed, self.problem_count, self.saved,
        )


@attrs.frozen(slots=True)
class Grown:
    """What the ledger holds of a file that has grown since its last import."""

    offset: int
    #: The fingerprints of what was read and the saved state: loaded just before the
    #: file is handed to a worker, never for every file of an archive at once.
    head_fp: str | None = None
    tail_fp: str | None = None
    saved: bytes | None = None


@attrs.frozen(slots=True)
class WorkItem:
    """One file to import: its path, the harness its location hints at, and how much there is to read."""

    path: str
    hint: str | None
    grown: Grown | None
    work: int
    #: The (harness, session id) of the sessions the ledger attributes to this file (the worker
    #: never opens the ledger), as they were when it was handed out.
    owned: tuple[tuple[str, str], ...] = ()
    #: The ledger knows the file, and :attr:`owned` (and a grown file's state) are still to be
    #: read from it: just before the file is handed out, not for every file at planning.
    unread: bool = False
    #: The ledger knew the file when it was handed out: :attr:`owned` is what it held then.
    known: bool = False

    @property
    def owned_ids(self) -> frozenset[str]:
        """The session ids of :attr:`owned`."""
        return frozenset(sid for _harness, sid in self.owned)


@functools.cache
def converter() -> Any:
    """The cattrs converter of outcomes and work items (made on first use: a rerun that
    finds nothing to do never needs it)."""
    import cattrs

    # Without detailed validation: the data is this version's own (a worker of this run), and
    # per-field error reports would cost each outcome the ledger writer reads a try block per field.
    return cattrs.Converter(detailed_validation=False)


def to_wire(value: FileOutcome | WorkItem) -> dict[str, Any]:
    """``value`` as plain data (dicts, lists, strings, numbers, bytes)."""
    out: dict[str, Any] = converter().unstructure(value)
    return out


def outcome_from_wire(data: dict[str, Any]) -> FileOutcome:
    """The :class:`FileOutcome` of :func:`to_wire`'s data."""
    out: FileOutcome = converter().structure(data, FileOutcome)
    return out


def item_from_wire(data: dict[str, Any]) -> WorkItem:
    """The :class:`WorkItem` of :func:`to_wire`'s data."""
    out: WorkItem = converter().structure(data, WorkItem)
    return out


def _names(cls: type) -> list[str]:
    return [f.name for f in attrs.fields(cls)]


# Between a local worker and its parent (the same program, forked), outcomes and work items travel
# as the lists of their fields' values, in order (the nested records as tuples). Built from the
# classes' own fields, so a field added to one travels without a change here.
_OUTCOME = operator.attrgetter(*_names(FileOutcome))
_SESSION = operator.attrgetter(*_names(SessionRow))
_CONFLICT = operator.attrgetter(*_names(Conflict))
_ITEM = operator.attrgetter(*_names(WorkItem))
_GROWN = operator.attrgetter(*_names(Grown))
_AT_SESSIONS = _names(FileOutcome).index("sessions")
_AT_CONFLICTS = _names(FileOutcome).index("conflicts")
_AT_GROWN = _names(WorkItem).index("grown")


def pack(value: FileOutcome | WorkItem) -> list[Any]:
    """``value`` as a local worker and its parent pass it: the list of its fields' values, in order.

    What :func:`to_wire` gives, without the converter's walk over every field: about a
    third of its cost each way, paid for every file a pool hands out and hears back about.
    For the local pool only (both ends run this very code); a cluster uses :func:`to_wire`.
    """
    if type(value) is FileOutcome:
        out = list(_OUTCOME(value))
        out[_AT_SESSIONS] = [_SESSION(s) for s in value.sessions]
        out[_AT_CONFLICTS] = [_CONFLICT(c) for c in value.conflicts]
        return out
    assert type(value) is WorkItem
    out = list(_ITEM(value))
    if value.grown is not None:
        out[_AT_GROWN] = _GROWN(value.grown)
    return out


def unpack_outcome(data: list[Any]) -> FileOutcome:
    """The :class:`FileOutcome` of :func:`pack`'s list (which it takes over)."""
    data[_AT_SESSIONS] = [SessionRow(*s) for s in data[_AT_SESSIONS]]
    data[_AT_CONFLICTS] = [Conflict(*c) for c in data[_AT_CONFLICTS]]
    return FileOutcome(*data)


def unpack_item(data: list[Any]) -> WorkItem:
    """The :class:`WorkItem` of :func:`pack`'s list (which it takes over)."""
    grown = data[_AT_GROWN]
    if grown is not None:
        data[_AT_GROWN] = Grown(*grown)
    return WorkItem(*data)


__all__ = ["FileOutcome", "Grown", "SessionRow", "WorkItem", "failed", "item_from_wire", "outcome_from_wire", "pack",
           "to_wire", "unpack_item", "unpack_outcome"]


def failed(reason: str, harness: str | None = None) -> FileOutcome:
    """A failed file's outcome."""
    return FileOutcome("failed", harness=harness, reason=reason)
