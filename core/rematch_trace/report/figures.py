"""Per-day, per-model and per-harness figures over session summaries (``rematch stats`` and the report).

Sessions count on the day they started; inputs, redirects, error clusters and
tool errors on the day they happened; tokens and cost on the day of their turn.
Cost is the exact sum of each turn's cost (stated by the trace, else priced from
the price table); ``priced_share`` says which share of the tokens it covers (a
model without a price leaves it below 1, and is named), so a partial cost is
never shown as the whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from rematch_trace.report.model_names import ModelNames
from rematch_trace.report.prices import PriceTable
from rematch_trace.report.text import clip, decimal_text, dollars

_ZERO = Decimal(0)


# Plain records, not attrs classes: ``rematch stats`` makes a few hundred of them, and importing attrs to
# generate their methods was about a sixth of the command on 3,300 stored summaries (bench/listing.py).
class Row:
    """One line of a figures table."""

    #: The fields in the order the JSON gives them.
    FIELDS = ("name", "sessions", "inputs", "redirects", "error_clusters", "tool_errors", "turns", "tokens", "cost",
              "priced_tokens")
    __slots__ = FIELDS

    def __init__(self, name: str, sessions: int = 0, inputs: int = 0, redirects: int = 0, error_clusters: int = 0,
                 tool_errors: int = 0, turns: int = 0, tokens: int = 0, cost: Decimal = _ZERO,
                 priced_tokens: int = 0) -> None:
        self.name = name
        self.sessions = sessions
        self.inputs = inputs
        self.redirects = redirects
        self.error_clusters = error_clusters
        self.tool_errors = tool_errors
        self.turns = turns
        self.tokens = tokens
        self.cost = cost
        self.priced_tokens = priced_tokens

    def __repr__(self) -> str:
        return f"Row({', '.join(f'{n}={getattr(self, n)!r}' for n in self.FIELDS)})"

    def as_json(self) -> dict[str, Any]:
        """The row as JSON: the cost as an exact decimal string (``null`` when no token of the row is
        priced), and the priced share of the tokens."""
        out = {name: getattr(self, name) for name in self.FIELDS}
        out["cost"] = decimal_text(self.cost) if self.priced_tokens or not self.tokens else None
        out["priced_share"] = round(self.priced_tokens / self.tokens, 4) if self.tokens else None
        return out


class ToolRow:
    """One tool's calls (tool results) and how many of them failed."""

    __slots__ = ("calls", "errors", "name", "sessions")

    def __init__(self, name: str, calls: int = 0, errors: int = 0, sessions: int = 0) -> None:
        self.name = name
        self.calls = calls
        self.errors = errors
        self.sessions = sessions

    def __repr__(self) -> str:
        return f"ToolRow(name={self.name!r}, calls={self.calls!r}, errors={self.errors!r}, sessions={self.sessions!r})"

    @property
    def error_rate(self) -> float:
        """The share of its calls that failed."""
        return self.errors / self.calls if self.calls else 0.0

    def as_json(self) -> dict[str, Any]:
        """The row as JSON, with its error rate (4 decimals)."""
        return {"name": self.name, "calls": self.calls, "errors": self.errors, "sessions": self.sessions,
                "error_rate": round(self.error_rate, 4)}


class Figures:
    """Totals, and rows per day (oldest first), per model and per harness (most tokens first), and per
    tool (most calls first)."""

    __slots__ = ("days", "harnesses", "models", "tools", "total")

    def __init__(self, total: Row, days: list[Row], models: list[Row], harnesses: list[Row],
                 tools: list[ToolRow] | None = None) -> None:
        self.total = total
        self.days = days
        self.models = models
        self.harnesses = harnesses
        self.tools = [] if tools is None else tools

    def unpriced(self) -> list[tuple[str, int]]:
        """The models with tokens no price covers, and how many, most first."""
        rows = [(r.name, r.tokens - r.priced_tokens) for r in self.models if r.tokens > r.priced_tokens]
        return sorted(rows, key=lambda x: (-x[1], x[0]))

    def as_json(self) -> dict[str, Any]:
        """Everything as JSON."""
        return {
            "total": self.total.as_json(),
            "days": [r.as_json() for r in self.days],
            "models": [r.as_json() for r in self.models],
            "harnesses": [r.as_json() for r in self.harnesses],
            "tools": [r.as_json() for r in self.tools],
            "unpriced_models": [{"model": m, "tokens": n} for m, n in self.unpriced()],
        }


def figures(summaries: Iterable[Mapping[str, Any]], prices: PriceTable | None = None) -> Figures:
    """Aggregate summaries, as their JSON (:func:`~rematch_trace.report.summary.to_json`, or the report
    cache's copy of it), into :class:`Figures`: a refresh adds up thousands of cached summaries without
    making an object of each.

    A session started by another one of ``summaries`` (a subagent, sidechain or compaction run under its
    main session, report/grouping.py) is not counted as a session of its own; its inputs, tokens and
    cost are counted, once, with the others.
    A model named with and without its snapshot date is one row
    (:func:`~rematch_trace.report.model_names.one_model`; ``prices`` may tell two such names apart).
    """
    from rematch_trace.report.grouping import child_keys

    summaries = list(summaries)
    nested = child_keys(summaries)
    one = ModelNames(prices)
    total = Row("total")
    days: dict[str, Row] = {}
    models: dict[str, Row] = {}
    harnesses: dict[str, Row] = {}
    tools: dict[str, ToolRow] = {}

    # A row made only when its name is new (``setdefault(name, Row(name))`` made one a lookup: 16,500
    # throwaway rows for 3,300 sessions).
    def day(name: str) -> Row:
        row = days.get(name)
        if row is None:
            row = days[name] = Row(name)
        return row

    for i, s in enumerate(summaries):
        h = harnesses.get(s["harness"]) or harnesses.setdefault(s["harness"], Row(s["harness"]))
        for row in (total, h, day(s.get("day") or "unknown")):
            row.sessions += i not in nested
        counted: set[str] = set()
        per_tool = s.get("tools")
        if isinstance(per_tool, Mapping):
            for name, (calls, errors) in per_tool.items():
                t = tools.get(name) or tools.setdefault(name, ToolRow(name))
                t.calls += calls
                t.errors += errors
                t.sessions += 1
        for d in s["daily"]:
            for row in (total, h, day(d["day"])):
                row.inputs += d["inputs"]
                row.redirects += d["redirects"]
                row.error_clusters += d["error_clusters"]
                row.tool_errors += d["tool_errors"]
        for u in s["usage"]:
            name = one(u["model"])
            m = models.get(name) or models.setdefault(name, Row(name))
            if name not in counted:
                counted.add(name)
                m.sessions += 1
            cost = Decimal(u["cost"])
            for row in (total, h, day(u["day"]), m):
                row.turns += u["turns"]
                row.tokens += u["tokens"]
                row.cost += cost
                row.priced_tokens += u["priced_tokens"]

    def by_tokens(rows: Mapping[str, Row]) -> list[Row]:
        return sorted(rows.values(), key=lambda r: (-r.tokens, r.name))

    return Figures(total, [days[k] for k in sorted(days)], by_tokens(models), by_tokens(harnesses),
                   sorted(tools.values(), key=lambda r: (-r.calls, r.name)))


def _money(cost: Decimal, priced: int, tokens: int) -> str:
    if not priced:
        return "n/a" if tokens else "-"
    text = dollars(cost)
    return text if priced == tokens else f"{text} ({priced * 100 // tokens}%)"


#: Tools the terminal table shows (most calls first); ``--json`` has them all.
TOOL_ROWS = 25
_ALL = (("sessions", "sessions"), ("inputs", "inputs"), ("redirects", "redirects"),
        ("error_clusters", "clusters"), ("tool_errors", "tool err"), ("turns", "turns"), ("tokens", "tokens"))
#: A model's row counts only what belongs to a model: its turns and what they used.
_MODEL = (("sessions", "sessions"), ("turns", "turns"), ("tokens", "tokens"))


def _table(title: str, rows: list[Row], cols: tuple[tuple[str, str], ...]) -> list[str]:
    heads = [h for _, h in cols] + ["cost"]
    cells = [[visible_name(r.name), *(f"{getattr(r, c):,}" for c, _ in cols), _money(r.cost, r.priced_tokens, r.tokens)]
             for r in rows]
    widths = [max(len(title), *(len(c[0]) for c in cells))] + [
        max(len(h), *(len(c[i + 1]) for c in cells)) for i, h in enumerate(heads)]
    lines = ["  ".join([title.ljust(widths[0]), *(h.rjust(w) for h, w in zip(heads, widths[1:], strict=True))])]
    for c in cells:
        lines.append("  ".join([c[0].ljust(widths[0]), *(x.rjust(w) for x, w in zip(c[1:], widths[1:], strict=True))]))
    return lines


def format_figures(f: Figures, prices: str = "") -> str:
    """The figures as terminal tables: per day, then per model and per harness; ``prices`` says where
    the prices came from."""
    if not f.total.sessions:
        return "no sessions"
    out = _table("day", [*f.days, f.total], _ALL)
    out += ["", *_table("model", f.models, _MODEL), "", *_table("harness", f.harnesses, _ALL)]
    if f.tools:
        out += ["", *_tool_table(f.tools[:TOOL_ROWS])]
        if len(f.tools) > TOOL_ROWS:
            out.append(f"... and {len(f.tools) - TOOL_ROWS:,} more tools (--json lists every one)")
    out += ["", "cost: as the trace states it, else tokens x the price table" + (f" ({prices})" if prices else "")
            + "; (N%) = the share of tokens it covers, n/a = no price"]
    missing = f.unpriced()
    if missing:
        named = ", ".join(f"{visible_name(m)} ({n:,} tokens)" for m, n in missing)
        out.append(f"no price for: {named}; add them to prices.yml in the data folder or pass --prices FILE")
    return "\n".join(out)


def _tool_table(rows: list[ToolRow]) -> list[str]:
    """Per tool: its calls, the sessions that made them, its failed calls and their share."""
    heads = ("calls", "sessions", "errors", "error rate")
    cells = [[visible_name(r.name), f"{r.calls:,}", f"{r.sessions:,}", f"{r.errors:,}", f"{r.error_rate:.1%}"]
             for r in rows]
    widths = [max(len("tool"), *(len(c[0]) for c in cells))] + [
        max(len(h), *(len(c[i + 1]) for c in cells)) for i, h in enumerate(heads)]
    lines = ["  ".join(["tool".ljust(widths[0]), *(h.rjust(w) for h, w in zip(heads, widths[1:], strict=True))])]
    for c in cells:
        lines.append("  ".join([c[0].ljust(widths[0]), *(x.rjust(w) for x, w in zip(c[1:], widths[1:], strict=True))]))
    return lines


def visible_name(name: str) -> str:
    """A model or harness name as a terminal may show it (hidden characters escaped, one line, clipped)."""
    return clip(name, 60)
