"""Token and cost totals by period, session or 5-hour block, as ccusage shows them (``rematch stats --by``).

Each session's stored summary keeps its turns' usage per quarter hour (UTC) and model, with the tokens
by kind (input, output, cache writes, cache reads), the exact cost and the times of the first and last
turn in it (report/summary.py, ``Slot``). These add them up per day, per week (from Monday) or per
month of a time zone (every zone's offset is a whole number of quarter hours, so a local day is made
of whole slots), per session (a main session with everything it started), or per 5-hour block:

- a block starts at its first turn's time floored to the whole UTC hour, and holds every turn of the
  5 hours from there (its end excluded);
- the first turn after a block's 5 hours starts the next one; when it comes more than 5 hours after the
  turn before it, the time between (from that turn plus 5 hours to this one) is a gap, shown as a row;
- a block is active while now is between its start and its end and less than 5 hours after its last turn.

This is ccusage's ``blocks`` rule, read from its documentation and source, but for a turn at exactly a
block's end to the millisecond, which ccusage keeps in the block ending then (docs/report.md).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from rematch_trace.report.text import clip, decimal_text, money

#: What ``--by`` may name.
PERIODS = ("day", "week", "month", "session", "block")
#: The token kinds, as the summaries name them, and as the table heads them.
KINDS = (("input", "input"), ("output", "output"), ("cache_write", "cache write"), ("cache_read", "cache read"))
#: A block's length, and the gap after a turn that shows a gap row.
BLOCK_MS = 5 * 3_600_000
HOUR_MS = 3_600_000
#: The row of the usage of turns with no time (a trace record without ``t``): no day, no block.
UNKNOWN = "unknown"


class Total:
    """One row: a period (or session, block or gap), its tokens by kind, all its tokens, its cost and models.

    A block also has its ``start``, ``end`` and ``last`` turn (milliseconds) and whether it is ``active``;
    a gap has its ``start`` and ``end`` and no usage.
    """

    __slots__ = ("active", "cache_read", "cache_write", "cost", "end", "gap", "input", "last", "models", "name",
                 "output", "priced_tokens", "start", "tokens")

    def __init__(self, name: str) -> None:
        self.name = name
        self.input = self.output = self.cache_write = self.cache_read = self.tokens = self.priced_tokens = 0
        self.cost = Decimal(0)
        self.models: set[str] = set()
        self.start: int | None = None
        self.end: int | None = None
        self.last: int | None = None
        self.active = self.gap = False

    def add(self, u: Mapping[str, Any]) -> None:
        """Add one usage entry of a summary (a slot, or a day and model, of one session)."""
        for kind, _ in KINDS:
            setattr(self, kind, getattr(self, kind) + int(u.get(kind) or 0))
        self.tokens += int(u.get("tokens") or 0)
        self.priced_tokens += int(u.get("priced_tokens") or 0)
        self.cost += Decimal(str(u.get("cost") or 0))
        if u.get("model"):
            self.models.add(str(u["model"]))

    def as_json(self, tz: dt.tzinfo | None = None) -> dict[str, Any]:
        """The row as JSON: the cost an exact decimal string (``null`` when none of its tokens has a price);
        a block's or gap's times as ISO 8601 in ``tz``."""
        out = {"period": self.name, **{kind: getattr(self, kind) for kind, _ in KINDS}, "tokens": self.tokens,
               "cost": decimal_text(self.cost) if self.priced_tokens or not self.tokens else None,
               "priced_share": round(self.priced_tokens / self.tokens, 4) if self.tokens else None,
               "models": sorted(self.models)}
        if self.start is not None and self.end is not None:
            out.update(start=iso(self.start, tz), end=iso(self.end, tz), gap=self.gap, active=self.active,
                       last=iso(self.last, tz) if self.last is not None else None)
        return out


def iso(t_ms: int, tz: dt.tzinfo | None) -> str | None:
    """A millisecond time as ISO 8601 with its offset in ``tz`` (UTC when ``None``), to the millisecond;
    ``None`` past what a date holds."""
    try:
        at = dt.datetime.fromtimestamp(t_ms // 1000, tz or dt.timezone.utc) + dt.timedelta(milliseconds=t_ms % 1000)
    except (OverflowError, OSError, ValueError):
        return None
    return at.isoformat(timespec="milliseconds")


def period_of(day: str, by: str) -> str:
    """The period a day (``YYYY-MM-DD``) falls in: the day, its week's Monday, or its month."""
    if by == "month":
        return day[:7]
    if by == "week":
        d = dt.date.fromisoformat(day)
        return (d - dt.timedelta(days=d.weekday())).isoformat()
    return day


class _Days:
    """The day in a zone of each slot's start (one conversion per slot start met)."""

    def __init__(self, tz: dt.tzinfo) -> None:
        self.tz = tz
        self.seen: dict[int, str] = {}

    def __call__(self, at: int) -> str:
        day = self.seen.get(at)
        if day is None:
            try:
                day = dt.datetime.fromtimestamp(at / 1000, self.tz).strftime("%Y-%m-%d")
            except (OverflowError, OSError, ValueError):  # a time past what a date holds, in this zone
                day = UNKNOWN
            self.seen[at] = day
        return day


def _roots(summaries: list[Mapping[str, Any]]) -> dict[str, str]:
    """Each session's main session (its parent's parent..., within these summaries; a loop is cut)."""
    parent = {str(s.get("session_id")): s.get("parent") for s in summaries}
    out: dict[str, str] = {}
    for sid in parent:
        seen = {sid}
        top = sid
        while isinstance(parent.get(top), str) and parent[top] in parent and parent[top] not in seen:
            top = str(parent[top])
            seen.add(top)
        out[sid] = top
    return out


def _untimed(s: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    """A summary's usage of turns with no time (its day ``unknown``): in no slot."""
    return [u for u in s.get("usage") or () if u.get("day") == UNKNOWN]


def totals(summaries: Iterable[Mapping[str, Any]], by: str, since: str | None = None, until: str | None = None,
           tz: dt.tzinfo = dt.timezone.utc, now: int | None = None) -> tuple[list[Total], Total]:
    """The rows (oldest first; sessions by their first turn) and the grand total of ``summaries``' usage, by
    ``by``; ``since``/``until`` (``YYYY-MM-DD`` in ``tz``, both kept) choose the usage by its day, or a block
    by its start's day. ``now`` (milliseconds; the clock when ``None``) tells which block is active."""
    chosen = list(summaries)
    if by == "block":
        return _blocks(chosen, since, until, tz, now)
    roots = _roots(chosen) if by == "session" else {}
    day_of = _Days(tz)
    rows: dict[str, Total] = {}
    first: dict[str, int] = {}
    total = Total("total")
    dated = since is not None or until is not None
    for s in chosen:
        sid = str(s.get("session_id"))
        for q in s.get("slots") or ():
            at = int(q["at"])
            day = day_of(at)
            if (since and day < since) or (until and day > until):
                continue
            name = roots.get(sid, sid) if by == "session" else period_of(day, by)
            rows.setdefault(name, Total(name)).add(q)
            first[name] = min(first.get(name, at), at)
            total.add(q)
        if dated:
            continue  # usage with no day is on none of the days chosen
        for u in _untimed(s):
            name = roots.get(sid, sid) if by == "session" else UNKNOWN
            rows.setdefault(name, Total(name)).add(u)
            first.setdefault(name, 1 << 62)
            total.add(u)
    if by == "session":
        order = sorted(rows, key=lambda n: (first[n], n))
    else:  # periods in order, the usage of no known day last
        order = sorted(rows, key=lambda n: (n == UNKNOWN, n))
    return [rows[n] for n in order], total


def _blocks(chosen: list[Mapping[str, Any]], since: str | None, until: str | None, tz: dt.tzinfo,
            now: int | None) -> tuple[list[Total], Total]:
    """:func:`totals` by 5-hour block (the module's rule), the gaps between them as rows of their own."""
    import time

    # Every session's slots of one quarter hour as one: a block holds all the usage of its hours.
    merged: dict[int, Total] = {}
    for s in chosen:
        for q in s.get("slots") or ():
            at = int(q["at"])
            m = merged.get(at)
            if m is None:
                m = merged[at] = Total("")
                m.start, m.last = int(q["first"]), int(q["last"])
            m.add(q)
            m.start = min(int(q["first"]), m.start if m.start is not None else int(q["first"]))
            m.last = max(int(q["last"]), m.last if m.last is not None else int(q["last"]))
    now_ms = int(time.time() * 1000) if now is None else now
    rows: list[Total] = []
    block: Total | None = None
    for at in sorted(merged):
        q = merged[at]
        assert q.start is not None and q.last is not None
        if block is None or block.end is None or at >= block.end:
            if block is not None and block.last is not None and q.start - block.last > BLOCK_MS:
                gap = Total("gap")
                gap.gap, gap.start, gap.end = True, block.last + BLOCK_MS, q.start
                rows.append(gap)
            start = q.start - q.start % HOUR_MS
            block = Total("")
            block.start, block.end, block.last = start, start + BLOCK_MS, q.last
            rows.append(block)
        _merge(block, q)
    for r in rows:
        if not r.gap and r.last is not None and r.end is not None:
            # (A block starting later than now, from a clock that was wrong, is not running.)
            r.active = now_ms - r.last < BLOCK_MS and r.start is not None and r.start <= now_ms < r.end
        assert r.start is not None
        r.name = _block_name(r, tz)
    day_of = _Days(tz)
    picked = [r for r in rows if r.start is not None
              and not ((since and day_of(r.start) < since) or (until and day_of(r.start) > until))]
    # A gap only between two blocks shown.
    picked = [r for i, r in enumerate(picked) if not r.gap or (0 < i < len(picked) - 1)]
    total = Total("total")
    for r in picked:
        _merge(total, r)
    if since is None and until is None:
        untimed = Total(UNKNOWN)
        for s in chosen:
            for u in _untimed(s):
                untimed.add(u)
                total.add(u)
        if untimed.tokens or untimed.models:
            picked.append(untimed)
    return picked, total


def _merge(into: Total, q: Total) -> None:
    """Add row ``q``'s usage to ``into`` (and its last turn, when later)."""
    for kind, _ in KINDS:
        setattr(into, kind, getattr(into, kind) + getattr(q, kind))
    into.tokens += q.tokens
    into.priced_tokens += q.priced_tokens
    into.cost += q.cost
    into.models |= q.models
    if into.last is not None and q.last is not None:
        into.last = max(into.last, q.last)


def _block_name(r: Total, tz: dt.tzinfo) -> str:
    """A block's row name: its start in ``tz`` (``2025-09-03 14:00``), ``now`` after it when it is the active
    one (a short word: the row fits 80 columns); a gap's: its length in whole hours."""
    assert r.start is not None and r.end is not None
    if r.gap:
        return f"gap {(r.end - r.start) // HOUR_MS}h"
    when = iso(r.start, tz)
    name = f"{when[:10]} {when[11:16]}" if when else UNKNOWN
    return f"{name} now" if r.active else name


def compact(n: int) -> str:
    """A token count in at most 6 characters: ``999``, ``12.3K``, ``123K``, ``4.56M``, ``1.23B``."""
    if n < 1000:
        return str(n)
    for unit, size in (("B", 10**9), ("M", 10**6), ("K", 10**3)):
        if n >= size:
            v = n / size
            text = f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 100 else f"{v:.0f}"
            return f"{text}{unit}"
    return str(n)  # pragma: no cover  (n >= 1000 always meets K)


def format_totals(rows: list[Total], total: Total, by: str, width: int | None = 80) -> str:
    """The rows and the total as a terminal table, at most ``width`` columns wide (``None``: every cell
    whole): token counts shortened (``12.3M``) when whole ones do not fit, then the first column cut."""
    heads = [by, *(h for _, h in KINDS), "all tokens", "cost"]
    #: The heads of short counts (fewer characters than the long heads above them).
    short_heads = [by, "input", "output", "cache wr", "cache rd", "tokens", "cost"]

    def cells(short: bool) -> list[list[str]]:
        num = compact if short else (lambda n: f"{n:,}")
        return [[r.name, *(("" if r.gap else num(getattr(r, k))) for k, _ in KINDS),
                 "" if r.gap else num(r.tokens), "" if r.gap else money(r.cost, r.priced_tokens, r.tokens)]
                for r in [*rows, total]]

    def widths_of(table: list[list[str]]) -> list[int]:
        return [max(len(h), *(len(c[i]) for c in table)) for i, h in enumerate(heads)]

    table = cells(False)
    widths = widths_of(table)
    if width is not None and sum(widths) + 2 * (len(widths) - 1) > width:
        table, heads = cells(True), short_heads
        widths = widths_of(table)
        over = sum(widths) + 2 * (len(widths) - 1) - width
        if over > 0:
            widths[0] = max(len(heads[0]), widths[0] - over)
    lines = ["  ".join([heads[0].ljust(widths[0]), *(h.rjust(w) for h, w in zip(heads[1:], widths[1:], strict=True))])]
    for i, c in enumerate(table):
        if i == len(table) - 1:
            lines.append("-" * len(lines[0]))
        lines.append("  ".join([clip(c[0], widths[0]).ljust(widths[0]),
                                *(x.rjust(w) for x, w in zip(c[1:], widths[1:], strict=True))]).rstrip())
    return "\n".join(lines)
