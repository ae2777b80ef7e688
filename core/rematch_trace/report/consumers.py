"""The consumers of a session's trace lines, registered in one place: what the import's worker and live
capture's writer both feed each line to as they write it.

A trace's lines are one stream; each consumer (:class:`LineConsumer`) takes every line as it is written
(its offset, its bytes and its record), may keep a resumable state beside the trace's committed length (a
grown file's import, a live session's next hook, continues from it), and gives its *handover* once the
outputs are committed (:class:`Committed`): the thing the one writer stores. :data:`REGISTRY` lists them,
in the order they are fed:

- ``summary``: the session's stored summary (:class:`~rematch_trace.report.summary.SummaryFold`), handed
  over as the ledger's ``summary`` column once the session's row is known;
- ``search_rows``: the search index's rows of the lines
  (:class:`~rematch_trace.store.search_rows.TraceRows`), handed over for the index's one writer to insert.

The two other outputs of the same records are written beside them by both writers: the trace itself
(``trace/lines.py``) and the security events (``security/events.py``, a consumer of the neutral records the
lines are made from). The plugin's conversation rows are read from the raw records by the import alone
(``importing/search_sources.py``): live capture has no raw records.

The registry is the core's own, not a pluggy hook: a consumer's handover has to be stored by the one
writer (a ledger column, an index table), and what a third party's consumer would hand over has nowhere to
go; a plugin translates records and stores nothing (docs/architecture.md). A consumer of the core is
added here with :func:`register` (its kind, a name its state and handover are kept under). Live capture
keeps every consumer's state; an import's saved state (``store/states.StreamState``) has a place for the
summary's alone today: a new consumer that must be continued across a grown file's import needs one there.

This room sits below both writers (``live/`` and ``importing/`` import it), and above the store, whose
rows it makes. It also makes the summary's: the price table (once per process and data folder) and the
stored summary's JSON.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import orjson

from rematch_trace.store.datafolder import DataDir
from rematch_trace.store.search_rows import TraceRows

if TYPE_CHECKING:
    from rematch_trace.report.prices import PriceTable
    from rematch_trace.report.summary import SummaryFold
    from rematch_trace.store.rows import SessionRow

#: Data folder root -> (its ``prices.yml``'s size and mtime, or ``None``; the table, or ``None`` if it failed).
_PRICES: dict[str, tuple[tuple[int, int] | None, PriceTable | None]] = {}


class LineConsumer(Protocol):
    """One session's consumer of its trace lines (see the module docstring)."""

    def feed(self, off: int, line: bytes, rec: Mapping[str, Any]) -> None:
        """Take one whole trace line written at ``off`` (``rec`` is its record; ``{}``: not a JSON object)."""

    def state(self) -> Any:
        """What continuing this consumer needs, as JSON values; ``None``: it is not continued (a later run
        makes it anew from where it starts)."""

    def handover(self, done: Committed) -> Any:
        """What this consumer gives the one writer for the outputs committed as ``done`` (``None``: nothing)."""


@attrs.frozen
class Opening:
    """What a session's consumers are made from."""

    data: DataDir
    #: The trace's length when the first line is fed (0 for a trace written whole).
    start: int
    #: Whether the trace is written whole (else continued from :attr:`saved`).
    whole: bool
    #: Each consumer's saved state, by name (a continued trace); a name missing: none saved.
    saved: Mapping[str, Any] = attrs.field(factory=dict)
    #: Applied to the index's text (a trace written unredacted: the index never holds raw text).
    index_redact: Callable[[str], Any] | None = None
    #: Bytes of index rows held before the index is left to read this trace itself (``None``: no bound).
    rows_limit: int | None = None


@attrs.frozen
class Committed:
    """The committed outputs a handover is for."""

    #: The trace's key (its file name in ``traces/`` without ``.jsonl``).
    key: str
    trace: Path
    #: The committed trace's inode, size and mtime (``None``: not known).
    stamp: tuple[int, int, int] | None
    #: The session's ledger row as ``report/stored.py`` reads it (harness, ids, place, flags); ``None``
    #: while the session goes on (live capture between hooks): the summary has nothing to hand over yet.
    row: Mapping[str, Any] | None = None


@attrs.frozen
class ConsumerKind:
    """A registered consumer: its name and how a session's is made (``None``: none for this session)."""

    name: str
    make: Callable[[Opening], LineConsumer | None]


def _prices(data: DataDir) -> PriceTable | None:
    # The shipped table cannot change under a running process; the folder's own file is checked by its
    # stat (not read and digested for every session, as a stored summary's basis check does).
    try:
        st = os.stat(data.root / "prices.yml")
        key: tuple[int, int] | None = (st.st_size, st.st_mtime_ns)
    except OSError:
        key = None
    got = _PRICES.get(str(data.root))
    if got is not None and got[0] == key:
        return got[1]
    from rematch_trace.report.prices import PriceError, load

    try:
        table: PriceTable | None = load(data.root)
    except PriceError:
        table = None  # no stored summary: `rematch stats` says why
    _PRICES[str(data.root)] = (key, table)
    return table


def summary_fold(data: DataDir) -> SummaryFold | None:
    """A fold for one session's summary at the data folder's prices, or ``None`` (they cannot be loaded)."""
    from rematch_trace.report.summary import SummaryFold

    prices = _prices(data)
    return SummaryFold(prices) if prices is not None else None


def resumed_fold(data: DataDir, state: Mapping[str, Any]) -> SummaryFold | None:
    """A fold continued from its saved ``state``, or ``None`` when it cannot be (another version, other
    prices: the trace is then folded whole once committed)."""
    from rematch_trace.report.summary import SummaryFold

    prices = _prices(data)
    return SummaryFold.resume(prices, state) if prices is not None else None


def stored_summary(data: DataDir, fold: SummaryFold, key: str, row: Mapping[str, Any]) -> str:
    """The ledger's ``summary`` column for a session whose trace ``key`` was folded whole into ``fold``
    (committed: its files' sizes and times are the basis), as report/stored.py would make it."""
    from rematch_trace.report.stored import basis
    from rematch_trace.report.summary import to_json

    b = basis(os.path.join(data.traces, f"{key}.jsonl"), os.path.join(data.events, f"{key}.jsonl"),
              fold.prices.source)
    return orjson.dumps({"basis": b, "summary": to_json(fold.result(key, row))}).decode()


class SummaryConsumer:
    """The stored summary: a :class:`~rematch_trace.report.summary.SummaryFold` of the lines.

    The fold (and the price table it costs turns at) is made when first needed, not when the consumer is: a
    live hook that writes no line loads neither. A continued trace whose fold cannot be continued (a state
    of another version or prices, or none) is folded whole from the committed file at the handover, where
    the trace was written (still in the page cache), rather than by the one writer after the run.
    """

    def __init__(self, data: DataDir, whole: bool, saved: Mapping[str, Any] | None) -> None:
        self.data = data
        self._whole = whole
        self._saved = saved
        self._made = False
        self._fold: SummaryFold | None = None

    @property
    def fold(self) -> SummaryFold | None:
        """The fold: new for a trace written whole, else continued from the saved state (``None``: it cannot be)."""
        if not self._made:
            self._made = True
            if self._whole:
                self._fold = summary_fold(self.data)
            elif self._saved is not None:
                # Continued from the fold's saved state: work in proportion to what the file grew by.
                self._fold = resumed_fold(self.data, self._saved)
        return self._fold

    def feed(self, off: int, line: bytes, rec: Mapping[str, Any]) -> None:
        """Fold one line's record."""
        fold = self._fold if self._made else self.fold
        if fold is not None:
            fold.feed(rec)

    def state(self) -> Any:
        """The fold's state (``None`` when the trace is folded whole at the handover)."""
        fold = self.fold
        return fold.state() if fold is not None else None

    def handover(self, done: Committed) -> str | None:
        """The stored summary's JSON once the session's row is known, else ``None``."""
        if done.row is None:
            return None
        fold = self.fold
        if fold is None:
            from rematch_trace.report.summary import trace_records

            fold = summary_fold(self.data)
            if fold is None:
                return None
            try:
                for rec in trace_records(done.trace):
                    fold.feed(rec)
            except OSError:
                return None  # made later from the trace (report/stored.py)
        return stored_summary(self.data, fold, done.key, done.row)


def _summary(opening: Opening) -> SummaryConsumer:
    return SummaryConsumer(opening.data, opening.whole, opening.saved.get("summary"))


class RowsConsumer:
    """The search index's rows of the lines (:class:`~rematch_trace.store.search_rows.TraceRows`).

    Not continued: each run hands the rows of the lines it wrote, and the index reads any line before them
    it lacks. Past :attr:`Opening.rows_limit` bytes of lines the rows are dropped and the index reads the
    trace itself (so a worker never holds a huge trace's text at once).
    """

    def __init__(self, start: int, redact: Callable[[str], Any] | None, limit: int | None) -> None:
        self.rows = TraceRows(start, redact)
        self.limit = limit

    def feed(self, off: int, line: bytes, rec: Mapping[str, Any]) -> None:
        """Make the line's row."""
        rows = self.rows
        rows.feed(off, line, rec)
        if self.limit is not None and rows.rows and rows.end - rows.start > self.limit:
            rows.rows.clear()
            rows.given_up = True

    def state(self) -> Any:
        """Nothing: the rows are not continued."""
        return None

    def handover(self, done: Committed) -> Any:
        """The rows for the index's writer (``None`` when given up or the trace's stamp is unknown)."""
        if self.rows.given_up or done.stamp is None:
            return None
        return self.rows.handed(done.stamp)


def _rows(opening: Opening) -> RowsConsumer:
    return RowsConsumer(opening.start, opening.index_redact, opening.rows_limit)


#: The registered consumers, in the order each line is fed to them.
REGISTRY: list[ConsumerKind] = [ConsumerKind("summary", _summary), ConsumerKind("search_rows", _rows)]


def register(kind: ConsumerKind) -> None:
    """Add a consumer (after those already registered; a name registered again replaces its kind)."""
    for i, known in enumerate(REGISTRY):
        if known.name == kind.name:
            REGISTRY[i] = kind
            return
    REGISTRY.append(kind)


class Consumers:
    """One session's consumers, made from :data:`REGISTRY` (or ``kinds``), fed together."""

    def __init__(self, opening: Opening, kinds: Sequence[ConsumerKind] | None = None) -> None:
        self.by_name: dict[str, LineConsumer] = {}
        for kind in REGISTRY if kinds is None else kinds:
            made = kind.make(opening)
            if made is not None:
                self.by_name[kind.name] = made
        self._all = list(self.by_name.values())
        #: The states from before lines a continuation kept in place (see :meth:`feed_kept`).
        self.before_kept: dict[str, Any] | None = None
        #: Whether a line was fed (a live hook that wrote none keeps the states it was given).
        self.fed = False

    def feed(self, off: int, line: bytes, rec: Mapping[str, Any]) -> None:
        """Feed one whole line to every consumer."""
        self.fed = True
        for c in self._all:
            c.feed(off, line, rec)

    def feed_records(self, at: int, recs: Sequence[Any], lines: Sequence[bytes]) -> int:
        """Feed the lines written at ``at`` of ``recs`` (each a record dict, or an ``orjson.Fragment`` of
        whole lines written again as they were, whose lines are read back as a trace's reader reads them);
        return the offset past them."""
        for rec, line in zip(recs, lines, strict=True):
            if type(rec) is dict:
                self.feed(at, line, rec)
                at += len(line)
                continue
            for part in line[:-1].split(b"\n"):
                one = part + b"\n"
                self.feed(at, one, read_line(part))
                at += len(one)
        return at

    def feed_kept(self, at: int, lines: bytes) -> None:
        """Feed the lines a continuation keeps in place at ``at`` (held records written again as they were),
        after keeping the states from before them: while they stay held, the state saved is that one."""
        self.before_kept = self.states()
        for line in lines.split(b"\n"):
            if line.strip():
                self.feed(at, line + b"\n", read_line(line))
            at += len(line) + 1

    def states(self, held_kept: bool = False) -> dict[str, Any]:
        """Each continued consumer's state, by name (``held_kept``: the states from before the kept lines)."""
        if held_kept and self.before_kept is not None:
            return self.before_kept
        out = {}
        for name, c in self.by_name.items():
            st = c.state()
            if st is not None:
                out[name] = st
        return out

    def handovers(self, done: Committed) -> dict[str, Any]:
        """Each consumer's handover for ``done``, by name (those with nothing left out)."""
        out = {}
        for name, c in self.by_name.items():
            got = c.handover(done)
            if got is not None:
                out[name] = got
        return out


def row_fields(harness: str, row: SessionRow) -> dict[str, Any]:
    """A session's ledger row as the ledger gives it back to report/stored.py (what :attr:`Committed.row`
    holds: the summary reads these), from the row about to be recorded."""
    return {"harness": harness, "session_id": row.session_id, "agent_kind": row.agent_kind, "cwd": row.cwd,
            "repo": row.repo, "repo_remote": row.repo_remote, "domain": row.domain, "flagged": row.flagged,
            "reasons": row.reasons, "seqs": row.seqs, "parent": row.parent}


def read_line(line: bytes) -> dict[str, Any]:
    """A trace line's record as the readers of a trace take it: ``{}`` when it is not a JSON object."""
    try:
        got = orjson.loads(line)
    except orjson.JSONDecodeError:
        return {}
    return got if type(got) is dict else {}
