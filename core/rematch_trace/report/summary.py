"""One session folded into the figures the report, ``rematch sessions`` and ``rematch stats`` show.

A summary is made from the ledger's row of a session (harness, flags and the
seqs behind them, domain, repository) and one streaming pass over its trace
(dates, models, counts, tokens and cost per day and model, and per quarter hour
and model for the totals by time zone and 5-hour block). Nothing of the
transcript's text is kept: a summary holds names, counts and dates only.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Iterator, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import attrs
import orjson

from rematch_trace.place.identity import normalize_remote
from rematch_trace.report.prices import Price, PriceTable

# Kept with the stored summaries (read on every listing, which need not import this module); re-exported.
from rematch_trace.report.row_fields import SUMMARY_VERSION as SUMMARY_VERSION
from rematch_trace.report.row_fields import parent_of as parent_of
from rematch_trace.report.row_fields import reason_seqs as reason_seqs
from rematch_trace.report.row_fields import upgrade as upgrade
from rematch_trace.trace.flags import CLUSTER_WINDOW

#: Distinct tool names counted per session (a transcript names its tools; more are counted as one).
MAX_TOOLS = 200
#: The name the tools past :data:`MAX_TOOLS` are counted under.
OTHER_TOOLS = "(other tools)"
#: Milliseconds of a :class:`Slot`: a quarter hour. Every time zone's offset from UTC today is a whole
#: number of quarter hours (+05:45, -09:30), so a local day, week or month starts on a slot's edge;
#: a 5-hour block starts on a whole UTC hour, so it ends on one too (report/totals.py).
SLOT_MS = 15 * 60_000


def day_of(t_ms: int | None) -> str | None:
    """The UTC day (``YYYY-MM-DD``) of a millisecond timestamp, or ``None``."""
    if t_ms is None:
        return None
    try:
        return dt.datetime.fromtimestamp(t_ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d")
    except (OverflowError, OSError, ValueError):
        return None


def model_name(model: Any) -> str | None:
    """``provider/id`` of a trace's model object (``id`` alone without a provider), or ``None``."""
    if not isinstance(model, Mapping):
        return None
    mid = model.get("id")
    if not isinstance(mid, str) or not mid:
        return None
    provider = model.get("provider")
    return f"{provider}/{mid}" if isinstance(provider, str) and provider else mid


def _int(value: Any) -> int:
    return value if type(value) is int and value >= 0 else 0


@attrs.define
class Usage:
    """Tokens and cost of one (day, model) of one session.

    ``cost`` sums, exactly, each turn's cost: the ``turn_end.usage.cost`` the
    trace states (omp), else the turn's tokens at the price table's prices;
    ``priced_tokens`` is the share of ``tokens`` whose turns had a cost (a model
    the table does not know has none), so a cost is never shown as complete
    when it is not.
    """

    day: str
    model: str
    turns: int = 0
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    #: Of ``cache_write``, the 1-hour writes.
    cache_write_1h: int = 0
    tokens: int = 0
    cost: Decimal = Decimal(0)
    priced_tokens: int = 0


@attrs.define
class Slot:
    """Tokens and cost of one quarter hour (UTC, from ``at``) and model of one session, with the time of
    its first and last turn (``first``, ``last``: milliseconds), which the 5-hour blocks need exactly
    (a gap is measured from the last turn before it to the first after)."""

    at: int
    model: str
    first: int
    last: int
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    tokens: int = 0
    cost: Decimal = Decimal(0)
    priced_tokens: int = 0


@attrs.define
class Daily:
    """What happened in one session on one UTC day."""

    day: str
    inputs: int = 0
    redirects: int = 0
    error_clusters: int = 0
    tool_errors: int = 0


@attrs.define
class SessionSummary:
    """One session's figures (no transcript text)."""

    key: str
    harness: str
    session_id: str
    agent_kind: str
    agent_name: str | None
    started: int | None
    ended: int | None
    day: str | None
    model: str | None
    models: list[str]
    cwd: str | None
    repo: str | None
    domain: str | None
    flagged: bool
    reasons: list[str]
    inputs: int
    tool_results: int
    tool_errors: int
    turns: int
    redirects: int
    error_clusters: int
    marks: int
    tokens: int
    cost: Decimal
    priced_tokens: int
    unreadable_lines: int
    usage: list[Usage]
    daily: list[Daily]
    #: Tool name -> [calls, calls that failed] (tool_result records).
    tools: dict[str, list[int]] = attrs.field(factory=dict)
    #: The session id of the main session that started this one (:func:`parent_of`), or ``None``.
    parent: str | None = None
    #: The turns' usage per quarter hour and model (turns with a time only), oldest first.
    slots: list[Slot] = attrs.field(factory=list)
    version: int = SUMMARY_VERSION


@functools.cache
def _converter() -> Any:
    """The summaries' converter, made on first use: a listing of stored summaries never structures one
    (cattrs builds its functions by generating code, a cost every command would pay at import)."""
    import cattrs

    conv = cattrs.Converter()
    # Costs are exact decimals: kept in JSON as their digits, never as a binary float.
    conv.register_unstructure_hook(Decimal, str)
    conv.register_structure_hook(Decimal, _decimal)
    return conv


def _decimal(value: Any, _: Any) -> Decimal:
    try:
        d = Decimal(value) if isinstance(value, str) else None
    except ArithmeticError:
        d = None
    if d is None or not d.is_finite():
        raise ValueError(f"not a decimal: {value!r}")
    return d


def to_json(summary: SessionSummary) -> dict[str, Any]:
    """The summary as a JSON object."""
    value: dict[str, Any] = _converter().unstructure(summary)
    return value


def from_json(value: Any) -> SessionSummary | None:
    """A summary back from :func:`to_json`'s object, or ``None`` if it is not one of this version."""
    if not isinstance(value, dict) or value.get("version") != SUMMARY_VERSION:
        return None
    import cattrs

    try:
        got: SessionSummary = _converter().structure(value, SessionSummary)
        return got
    except (cattrs.BaseValidationError, TypeError, ValueError, KeyError):
        return None


def trace_records(path: Path) -> Iterator[dict[str, Any]]:
    """The records of a trace file, streamed; a line that is not a JSON object yields ``{}``."""
    with open(path, "rb") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                rec = None
            yield rec if isinstance(rec, dict) else {}


def cluster_starts(error_cluster_seqs: list[int], result_index: Mapping[int, int]) -> set[int]:
    """The seq opening each error cluster: a flagged error more than a window of results after the last.

    ``result_index`` maps a tool_result's seq to its ordinal among the session's results.
    """
    starts: set[int] = set()
    last: int | None = None
    for seq in sorted(error_cluster_seqs):
        n = result_index.get(seq)
        if n is None:
            continue
        if last is None or n - last >= CLUSTER_WINDOW:
            starts.add(seq)
        last = n
    return starts


def stated_cost(value: Any) -> Decimal | None:
    """A turn's ``usage.cost`` as the trace states it, as an exact decimal, or ``None``.

    A stated cost is a binary float (omp adds its parts in JavaScript: ``0.000021000000000000002``).
    Its decimal is read to 15 significant digits, as many as a float is guaranteed to carry (DBL_DIG):
    any decimal of up to 15 digits the harness meant comes back exactly, and the float's noise past
    them does not add up into the sums (``117.037065599999999556`` for ``117.0370656``).
    """
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 1e9:
        return Decimal(format(value, ".15g")) if isinstance(value, float) else Decimal(value)
    return None


def turn_cost(u: Mapping[str, Any], price: Price | None) -> Decimal | None:
    """One turn's cost: what the trace states, else its tokens at ``price``; ``None`` if neither."""
    stated = stated_cost(u.get("cost"))
    if stated is not None:
        return stated
    if price is None:
        return None
    return price.cost(_int(u.get("input")), _int(u.get("output")), _int(u.get("cacheRead")), _int(u.get("cacheWrite")),
                      _int(u.get("cacheWrite1h")))


class SummaryFold:
    """A session's summary folded one trace record at a time (a consumer of the trace as it is written, or
    of a trace file read back: :func:`summarize`); :meth:`result` adds the ledger row's flags and place.

    ``call_ids``, when given, receives the call id of every tool_result (a page needs them to tell
    the calls that never got a result, and this pass reads them anyway).
    """

    def __init__(self, prices: PriceTable, call_ids: set[str] | None = None) -> None:
        self.prices = prices
        self.call_ids = call_ids
        self.started: int | None = None
        self.ended: int | None = None
        self.start_model: str | None = None
        self.current: str | None = None
        self.agent_name: str | None = None
        self.models: list[str] = []
        self.usage: dict[tuple[str, str], Usage] = {}
        self.slots: dict[tuple[int, str], Slot] = {}
        self.price_of: dict[str, Price | None] = {}
        self.daily: dict[str, Daily] = {}
        #: Each input's seq -> its day (the ledger's redirect flags are counted against them at the end).
        self.input_day: dict[int, str] = {}
        self.result_index: dict[int, int] = {}
        self.result_day: dict[int, str] = {}
        self.inputs = self.results = self.errors = self.turns = self.unreadable = 0
        self.tools: dict[str, list[int]] = {}
        self.days_seen: dict[int, str] = {}

    def state(self) -> dict[str, Any]:
        """What continuing this fold needs, as JSON values (:meth:`resume`); tagged with the summary version
        and the prices it was costed at."""
        return {
            "version": SUMMARY_VERSION, "prices": self.prices.source,
            "started": self.started, "ended": self.ended, "start_model": self.start_model, "current": self.current,
            "agent_name": self.agent_name, "models": list(self.models),
            "usage": [[u.day, u.model, u.turns, u.input, u.output, u.cache_read, u.cache_write, u.cache_write_1h,
                       u.tokens, str(u.cost), u.priced_tokens] for u in self.usage.values()],
            "slots": [[q.at, q.model, q.first, q.last, q.input, q.output, q.cache_read, q.cache_write, q.tokens,
                       str(q.cost), q.priced_tokens] for q in self.slots.values()],
            "daily": [[d.day, d.inputs, d.redirects, d.error_clusters, d.tool_errors] for d in self.daily.values()],
            "input_day": [[k, v] for k, v in self.input_day.items()],
            "result_index": [[k, v] for k, v in self.result_index.items()],
            "result_day": [[k, v] for k, v in self.result_day.items()],
            "counts": [self.inputs, self.results, self.errors, self.turns, self.unreadable],
            "tools": {k: list(v) for k, v in self.tools.items()},
        }

    @classmethod
    def resume(cls, prices: PriceTable, state: Mapping[str, Any]) -> SummaryFold | None:
        """A fold continued from :meth:`state`'s value, or ``None`` when it is of another version or prices,
        or not such a value."""
        if state.get("version") != SUMMARY_VERSION or state.get("prices") != prices.source:
            return None
        fold = cls(prices)
        try:
            fold.started, fold.ended = state["started"], state["ended"]
            fold.start_model, fold.current, fold.agent_name = state["start_model"], state["current"], state["agent_name"]
            fold.models = list(state["models"])
            for day, model, turns, inp, out, c_read, c_write, c_write_1h, tokens, cost, priced in state["usage"]:
                fold.usage[(day, model)] = Usage(day, model, turns, inp, out, c_read, c_write, c_write_1h, tokens,
                                                 Decimal(cost), priced)
            for at, model, first, last, inp, out, c_read, c_write, tokens, cost, priced in state["slots"]:
                fold.slots[(at, model)] = Slot(at, model, first, last, inp, out, c_read, c_write, tokens,
                                               Decimal(cost), priced)
            for day, *figures in state["daily"]:
                fold.daily[day] = Daily(day, *figures)
            fold.input_day = {int(k): v for k, v in state["input_day"]}
            fold.result_index = {int(k): int(v) for k, v in state["result_index"]}
            fold.result_day = {int(k): v for k, v in state["result_day"]}
            fold.inputs, fold.results, fold.errors, fold.turns, fold.unreadable = state["counts"]
            fold.tools = {k: list(v) for k, v in state["tools"].items()}
        except (KeyError, TypeError, ValueError, ArithmeticError):
            return None
        # Each day met so far, by its number (a cache of day_of's formatting, rebuilt).
        fold.days_seen = {}
        return fold

    def feed(self, rec: Mapping[str, Any]) -> None:
        """Take one trace record (an empty one: a line that was not a JSON object)."""
        if not rec:
            self.unreadable += 1
            return
        ev = rec.get("ev")
        t = rec.get("t") if type(rec.get("t")) is int else None
        if t is not None and t > 0:
            self.started = t if self.started is None else min(self.started, t)
            self.ended = t if self.ended is None else max(self.ended, t)
        # One date formatting per day met, not per record (a session's records share few days).
        n_day = t // 86_400_000 if t is not None else None
        day = self.days_seen.get(n_day) if n_day is not None else None
        if day is None:
            day = day_of(t) or "unknown"
            if n_day is not None:
                self.days_seen[n_day] = day
        seq: int = rec["seq"] if type(rec.get("seq")) is int else -1
        if ev == "session_start":
            self.start_model = self.current = model_name(rec.get("model"))
            agent = rec.get("agent")
            if isinstance(agent, Mapping) and isinstance(agent.get("name"), str):
                self.agent_name = agent["name"]
        elif ev == "model_change":
            self.current = model_name(rec.get("to")) or self.current
        elif ev == "input":
            self.inputs += 1
            self.daily.setdefault(day, Daily(day)).inputs += 1
            self.input_day[seq] = day
        elif ev == "tool_result":
            self.result_index[seq] = self.results
            if self.call_ids is not None and isinstance(rec.get("call_id"), str):
                self.call_ids.add(rec["call_id"])
            self.result_day[seq] = day
            self.results += 1
            tools = self.tools
            tool = rec["tool"] if isinstance(rec.get("tool"), str) else "unknown"
            if tool not in tools and len(tools) >= MAX_TOOLS:
                tool = OTHER_TOOLS
            counts = tools.setdefault(tool, [0, 0])
            counts[0] += 1
            if rec.get("is_error") is True:
                counts[1] += 1
                self.errors += 1
                self.daily.setdefault(day, Daily(day)).tool_errors += 1
        elif ev == "turn_end":
            self.turns += 1
            name = model_name(rec.get("model")) or self.current or "unknown"
            if self.start_model is None:
                self.start_model = name
            u = rec.get("usage") if isinstance(rec.get("usage"), Mapping) else {}
            assert isinstance(u, Mapping)
            slot = self.usage.setdefault((day, name), Usage(day, name))
            inp, out, c_read, c_write = _int(u.get("input")), _int(u.get("output")), _int(u.get("cacheRead")), \
                _int(u.get("cacheWrite"))
            total = _int(u.get("totalTokens"))
            slot.turns += 1
            slot.input += inp
            slot.output += out
            slot.cache_read += c_read
            slot.cache_write += c_write
            slot.cache_write_1h += _int(u.get("cacheWrite1h"))
            slot.tokens += total
            if name not in self.price_of:
                self.price_of[name] = self.prices.lookup(name)
            cost = turn_cost(u, self.price_of[name])
            if cost is not None:
                slot.cost += cost
                slot.priced_tokens += total
            if t is not None and day != "unknown":  # a time a date can hold (else the usage's day is unknown too)
                # The turn's quarter hour and model (report/totals.py's periods in any zone, and blocks).
                at = t - t % SLOT_MS
                q = self.slots.get((at, name))
                if q is None:
                    q = self.slots[(at, name)] = Slot(at, name, t, t)
                elif t < q.first:
                    q.first = t
                elif t > q.last:
                    q.last = t
                q.input += inp
                q.output += out
                q.cache_read += c_read
                q.cache_write += c_write
                q.tokens += total
                if cost is not None:
                    q.cost += cost
                    q.priced_tokens += total
        name_ = model_name(rec.get("model")) if ev in ("session_start", "turn_end") else None
        if name_ and name_ not in self.models:
            self.models.append(name_)

    def result(self, key: str, row: Mapping[str, Any]) -> SessionSummary:
        """The summary of the records fed, with the ledger ``row``'s flags and place."""
        flags = reason_seqs(row)
        daily = {d: attrs.evolve(v) for d, v in self.daily.items()}
        # Each input the ledger's flags call a redirect, on its day (the flags are the authority, not a
        # second reading of the records).
        for seq in set(flags.get("redirect", [])):
            day = self.input_day.get(seq)
            if day is not None:
                daily[day].redirects += 1
        starts = cluster_starts(flags.get("error_cluster", []), self.result_index)
        for seq in starts:
            daily.setdefault(self.result_day[seq], Daily(self.result_day[seq])).error_clusters += 1
        redirects = sum(d.redirects for d in daily.values())
        use = sorted((attrs.evolve(u) for u in self.usage.values()), key=lambda u: (u.day, u.model))
        return SessionSummary(
            key=key,
            harness=str(row.get("harness") or ""),
            session_id=str(row.get("session_id") or ""),
            agent_kind=str(row.get("agent_kind") or ""),
            agent_name=self.agent_name,
            started=self.started,
            ended=self.ended,
            day=day_of(self.started),
            model=self.start_model,
            models=list(self.models),
            cwd=row.get("cwd"),
            # One spelling per repository (host/owner/repo), so a filter groups its sessions however git spelt it.
            repo=normalize_remote(row.get("repo_remote")) or row.get("repo"),
            domain=row.get("domain"),
            flagged=bool(row.get("flagged")),
            reasons=[r for r in row.get("reasons") or [] if isinstance(r, str)],
            inputs=self.inputs,
            tool_results=self.results,
            tool_errors=self.errors,
            turns=self.turns,
            redirects=redirects,
            error_clusters=len(starts),
            marks=len(flags.get("mark", [])),
            tokens=sum(u.tokens for u in use),
            cost=sum((u.cost for u in use), Decimal(0)),
            priced_tokens=sum(u.priced_tokens for u in use),
            unreadable_lines=self.unreadable,
            tools={k: list(v) for k, v in self.tools.items()},
            usage=use,
            daily=sorted(daily.values(), key=lambda d: d.day),
            parent=parent_of(row),
            slots=sorted((attrs.evolve(q) for q in self.slots.values()), key=lambda q: (q.at, q.model)),
        )


def summarize(key: str, row: Mapping[str, Any], trace: Path, prices: PriceTable,
              call_ids: set[str] | None = None) -> SessionSummary:
    """Fold the ledger ``row`` of a session and its ``trace`` file into a :class:`SessionSummary`
    (:class:`SummaryFold` over the file's records; ``call_ids`` as its)."""
    fold = SummaryFold(prices, call_ids)
    for rec in trace_records(trace):
        fold.feed(rec)
    return fold.result(key, row)
