"""Every session of a data folder as a summary, read through the ledger, with a cache that follows it.

A session's *stamp* is a digest of its ledger row and of the size and mtime of
its trace and events files: the import rewrites one of them whenever the
session changes. A summary cached under the same stamp is reused without
reading the trace, which is what makes a rerun of ``rematch report`` (and
``rematch sessions`` / ``stats`` after a report) cost about a ledger read.
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from rematch_trace.report.row_fields import SUMMARY_VERSION
from rematch_trace.report.stored import size_mtime
from rematch_trace.store.datafolder import DataDir, key_of

if TYPE_CHECKING:
    # Imported where a summary is made or checked: a listing of stored summaries does neither, and these
    # modules' attrs classes (with attrs itself) are a seventh of its instructions.
    from rematch_trace.report.prices import PriceTable
    from rematch_trace.report.summary import SessionSummary
    from rematch_trace.store.ledger import Ledger

#: The cache file of a report folder.
CACHE_NAME = "summaries.json"


class NothingImported(Exception):
    """The data folder has no ledger yet."""


#: The columns a reader of stored summaries needs of each row (the rest is read for a session when asked).
LISTING = ("harness", "session_id", "trace_path", "flagged", "agent_kind", "parent", "summary")


def ledger_rows(data: DataDir, columns: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Every session row of the ledger as stored (only ``columns`` when given), its JSON columns still
    text (``NothingImported`` when there is none): most readers use stored summaries and never decode
    a row."""
    from rematch_trace.store.ledger import Ledger

    if not data.ledger.exists():
        raise NothingImported(f"nothing imported into {data.root} yet; run: rematch import")
    with Ledger(data.ledger, readonly=True) as ledger:  # also in a read-only data folder
        return ledger.sessions_raw(columns)


def _full_row(raw: dict[str, Any], ledger_file: str | None) -> dict[str, Any]:
    """``raw`` decoded; when it holds only some columns (``ledger_file`` given), the whole row read first."""
    from rematch_trace.store.ledger import Ledger, decoded

    if ledger_file is None:
        return decoded(raw)
    with Ledger(Path(ledger_file), readonly=True) as ledger:
        return _row_in(ledger, raw)


def _row_in(ledger: Ledger, raw: dict[str, Any]) -> dict[str, Any]:
    """The whole row of ``raw``'s session, decoded. A row gone meanwhile (``rematch forget``) is what
    ``raw`` holds, decoded as far as it goes."""
    from rematch_trace.store.ledger import decoded

    got = ledger.sessions_row_raw(raw["harness"], raw["session_id"])
    if got is not None:
        return decoded(got)
    return decoded({**raw, "counts": None, "reasons": None, "redirect_seqs": None, "error_cluster_seqs": None,
                    "mark_seqs": None, "seqs": None})


def load_rows(entries: Sequence[Entry]) -> None:
    """Give each entry its whole ledger row, reading each ledger once (``Entry.row`` opens it per entry:
    ``flagged --json`` of a thousand sessions would open it a thousand times)."""
    from rematch_trace.store.ledger import Ledger

    wanting: dict[str, list[Entry]] = {}
    for e in entries:
        if e._row is None and e.ledger_file is not None:
            wanting.setdefault(e.ledger_file, []).append(e)
    for ledger_file, group in wanting.items():
        with Ledger(Path(ledger_file), readonly=True) as ledger:
            for e in group:
                e._row = _row_in(ledger, e.raw)


def stamp(row: Mapping[str, Any], trace: Path | str, events: Path | str, prices: str = "") -> str:
    """A digest that changes whenever the session's ledger row, trace or events file, or the prices
    (``prices``, the price table's digest), change."""
    return _stamp(row, size_mtime(str(trace)), size_mtime(str(events)), prices)


def _stamp(row: Mapping[str, Any], trace: list[int], events: list[int], prices: str) -> str:
    """:func:`stamp` of the files' (size, mtime) already read."""
    # The ledger gives its columns in one order: no key sorting needed for the digest to be stable.
    blob = orjson.dumps([row, trace, events, prices], default=str)
    return hashlib.sha256(blob).hexdigest()[:32]


class Entry:
    """One session as collected: its row, stamp, summary, and whether the summary was recomputed.

    A session whose stamp matches the cache keeps the cache's JSON (``cached``) and is turned into a
    :class:`SessionSummary` only when something asks for ``summary``: a rerun that changes nothing
    never pays for it.
    """

    # A plain record, not an attrs class: one is made per session on every listing, and attrs would
    # generate (compile) its methods at import, which ``sessions`` / ``stats`` pay for nothing they use.
    __slots__ = ("_row", "_summary", "cached", "call_ids", "events_file", "fresh", "key", "ledger_file", "prices",
                 "raw", "stamp", "trace_file")

    def __init__(self, key: str, raw: dict[str, Any], stamp: str, trace_file: str, events_file: str, fresh: bool,
                 cached: dict[str, Any] | None = None, call_ids: set[str] | None = None,
                 prices: PriceTable | None = None, summary: SessionSummary | None = None,
                 row: dict[str, Any] | None = None, ledger_file: str | None = None) -> None:
        self.key = key
        self.raw = raw  # the ledger row as stored (JSON columns as text): decoded only when asked for
        self.stamp = stamp
        self.trace_file = trace_file
        self.events_file = events_file
        self.fresh = fresh
        self.cached = cached  # the summary's JSON as the cache held it (written back as it is)
        self.call_ids = call_ids
        self.prices = prices  # to recompute a cached summary that turns out to be damaged
        self._summary = summary
        self._row = row
        self.ledger_file = ledger_file  # where the rest of the row is, when ``raw`` holds only LISTING

    def __repr__(self) -> str:
        return f"Entry(key={self.key!r}, fresh={self.fresh!r}, trace_file={self.trace_file!r})"

    @property
    def row(self) -> dict[str, Any]:
        """The session's ledger row, decoded (on first use: a listing of stored summaries never needs it)."""
        if self._row is None:
            self._row = _full_row(self.raw, self.ledger_file)
        return self._row

    @property
    def trace(self) -> Path:
        """The session's trace file."""
        return Path(self.trace_file)

    @property
    def events(self) -> Path:
        """The session's events file."""
        return Path(self.events_file)

    @property
    def summary(self) -> SessionSummary:
        """The session's summary (from the cache's JSON, or recomputed if that JSON is damaged)."""
        if self._summary is None:
            from rematch_trace.report.summary import from_json, summarize, to_json

            got = from_json(self.cached)
            # Damaged is also what structures but does not give back the same JSON (a field dropped, a
            # default filled in): recomputed from the trace, never shown as it is.
            if got is None or to_json(got) != self.cached:
                assert self.prices is not None
                self.call_ids = set()
                got = summarize(self.key, self.row, self.trace, self.prices, self.call_ids)
                self.cached, self.fresh = None, True
            self._summary = got
        return self._summary

    def facet(self, name: str) -> Any:
        """One field of the summary, read from the cache's JSON when the summary is not made yet."""
        if self._summary is None and self.cached is not None:
            return self.cached.get(name)
        return getattr(self.summary, name)

    def json(self) -> dict[str, Any]:
        """The summary as JSON (the cache's own object when it was not recomputed)."""
        if self.cached is not None:
            return self.cached
        from rematch_trace.report.summary import to_json

        return to_json(self.summary)


class Collected:
    """The sessions of a data folder, newest first, and the one-line problems met."""

    __slots__ = ("entries", "problems", "reused")  # a plain record, as :class:`Entry`

    def __init__(self, entries: list[Entry], problems: list[str], reused: int) -> None:
        self.entries = entries
        self.problems = problems
        self.reused = reused


def read_cache(path: Path) -> tuple[dict[str, dict[str, Any]], str | None, str | None]:
    """``key -> {"stamp", "summary", "page", "row"}`` from a report's cache file, the build it was made by
    and the digest of what its index was made from; empty and ``None`` if the file is missing or not
    readable."""
    try:
        value = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}, None, None
    if not isinstance(value, dict):
        return {}, None, None
    sessions = value.get("sessions")
    build = value.get("build") if isinstance(value.get("build"), str) else None
    index = value.get("index") if isinstance(value.get("index"), str) else None
    return ({k: v for k, v in sessions.items() if isinstance(v, dict)} if isinstance(sessions, dict) else {}), build, index


def _order(e: Entry) -> tuple[int, str, str]:
    # The stored JSON read directly when there is no summary object (the listing's case: one per session).
    get = e.cached.get if e._summary is None and e.cached is not None else e.facet
    started = get("started")
    return (-(started if type(started) is int else 0), str(get("harness")), str(get("session_id")))


def newest_first(entries: list[Entry]) -> None:
    """Sort in place: newest start first, then harness and id (a stable order)."""
    entries.sort(key=_order)


def _usable(cached: Any) -> bool:
    """Whether a cached summary is of this version and has the fields read before it is structured."""
    return (isinstance(cached, dict) and cached.get("version") == SUMMARY_VERSION
            and isinstance(cached.get("harness"), str) and isinstance(cached.get("session_id"), str)
            and (cached.get("started") is None or type(cached.get("started")) is int)
            and (cached.get("day") is None or isinstance(cached.get("day"), str)))


def collect(data: DataDir, cache: Mapping[str, Mapping[str, Any]], prices: PriceTable, *,
            stamps: bool = True) -> Collected:
    """:func:`_collect`, with the cyclic garbage collector paused: the thousands of summaries' dicts it
    allocates hold no cycles, yet set off collections that walk every one of them (3% of a listing)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return _collect(data, cache, prices, stamps=stamps)
    finally:
        if paused:
            gc.enable()


def _collect(data: DataDir, cache: Mapping[str, Mapping[str, Any]], prices: PriceTable, *,
             stamps: bool = True) -> Collected:
    """Summaries of every session in the ledger, reusing ``cache`` entries whose stamp still matches.

    Without ``stamps`` (a reader with no cache to match and none to write: ``sessions``, ``stats``),
    the entries' stamps are left empty, not computed.

    The stamp includes the digest of ``prices``: a changed price recomputes every summary.

    A session whose trace cannot be read is a problem line, not a crash; the others still count.
    """
    entries: list[Entry] = []
    problems: list[str] = []
    reused = 0
    seen: set[str] = set()
    # Plain strings for the paths: thousands of sessions are stat'ed on every run.
    traces, events_dir = str(data.traces), str(data.events)
    from rematch_trace.report.row_fields import upgrade
    from rematch_trace.report.stored import stored_summary

    # Without stamps only the listing's columns are read: the rest of a row when something asks.
    partial = None if stamps else str(data.ledger)
    traces, events_dir = traces + "/", events_dir + "/"
    for row in ledger_rows(data, () if stamps else LISTING):
        # Not part of the stamp: the stored summary is kept (and checked) apart (report/stored.py).
        # The stamp digests the row as stored (JSON columns as text): the same facts, nothing decoded.
        stored = row.pop("summary", None)
        key = key_of(row)
        if key is None or key in seen:
            problems.append(f"session {row.get('session_id')!r}: unusable trace path {row.get('trace_path')!r}; skipped")
            continue
        seen.add(key)
        trace = f"{traces}{key}.jsonl"
        events = f"{events_dir}{key}.jsonl"
        # Each file stat'ed once: for the stamp and for the stored summary's basis.
        t_st, e_st = size_mtime(trace), size_mtime(events)
        st = _stamp(row, t_st, e_st, prices.digest) if stamps else ""
        cached = cache.get(key) if cache else None
        if cached and cached.get("stamp") == st and _usable(cached.get("summary")):
            reused += 1
            entries.append(Entry(key, row, st, trace, events, fresh=False, cached=cached["summary"], prices=prices))
            continue
        # A summary stored before it kept the session's parent is given it from the row (no trace read).
        led = upgrade(stored_summary(stored, [*t_st, *e_st, prices.source]), row)
        if led is not None and _usable(led):
            # Made when the session's outputs were: new to a report's cache, but no trace is read.
            # Positional: this is the call made once a session on every listing.
            entries.append(Entry(key, row, st, trace, events, True, led, None, prices, None, None, partial))
            continue
        from rematch_trace.report.summary import summarize

        ids: set[str] = set()
        try:
            summary = summarize(key, _full_row(row, partial), Path(trace), prices, ids)
        except OSError as err:
            problems.append(f"{trace}: {err.strerror or err}; session {row.get('session_id')!r} skipped")
            continue
        entries.append(Entry(key, row, st, trace, events, fresh=True, call_ids=ids, prices=prices, summary=summary,
                             ledger_file=partial))
    newest_first(entries)
    return Collected(entries, problems, reused)


T = TypeVar("T")


def with_json(entries: list[Entry], use: Callable[[list[dict[str, Any]]], T]) -> T:
    """``use`` applied to the entries' summaries as JSON (most of them the cache's, used as they are).

    A cache entry damaged in a way :func:`collect`'s first checks let through makes every summary be
    checked (a damaged one recomputed from its trace), and ``use`` is applied again.
    """
    try:
        return use([e.json() for e in entries])
    except (KeyError, TypeError, ValueError, ArithmeticError, AttributeError):
        for e in entries:
            assert e.summary is not None
        return use([e.json() for e in entries])


def since_filter(entries: list[Entry], since: str | None) -> Iterator[Entry]:
    """The entries whose session started on or after the day ``since`` (``YYYY-MM-DD``); all if ``None``."""
    for e in entries:
        day = e.facet("day")
        if since is None or (isinstance(day, str) and day >= since):
            yield e
