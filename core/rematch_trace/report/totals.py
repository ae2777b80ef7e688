"""Token and cost totals by period or session, as ccusage shows them (``rematch stats --by``).

Each session's stored summary keeps its usage per (UTC day, model) with the tokens by kind (input,
output, cache writes, cache reads) and the exact cost; these add them up per day, per week (from
Monday), per month or per session (a main session with everything it started). Days are UTC: the
summaries keep no finer time, so there is no other time zone and no 5-hour block here (see
docs/report.md, "Totals by period").
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from rematch_trace.report.text import clip, decimal_text, money

#: What ``--by`` may name.
PERIODS = ("day", "week", "month", "session")
#: The token kinds, as the summaries name them, and as the table heads them.
KINDS = (("input", "input"), ("output", "output"), ("cache_write", "cache write"), ("cache_read", "cache read"))


class Total:
    """One row: a period (or session), its tokens by kind, all its tokens, its cost and the models used."""

    __slots__ = ("cache_read", "cache_write", "cost", "input", "models", "name", "output", "priced_tokens", "tokens")

    def __init__(self, name: str) -> None:
        self.name = name
        self.input = self.output = self.cache_write = self.cache_read = self.tokens = self.priced_tokens = 0
        self.cost = Decimal(0)
        self.models: set[str] = set()

    def add(self, u: Mapping[str, Any]) -> None:
        """Add one usage entry of a summary (a day and model of one session)."""
        for kind, _ in KINDS:
            setattr(self, kind, getattr(self, kind) + int(u.get(kind) or 0))
        self.tokens += int(u.get("tokens") or 0)
        self.priced_tokens += int(u.get("priced_tokens") or 0)
        self.cost += Decimal(str(u.get("cost") or 0))
        if u.get("model"):
            self.models.add(str(u["model"]))

    def as_json(self) -> dict[str, Any]:
        """The row as JSON: the cost an exact decimal string (``null`` when none of its tokens has a price)."""
        return {"period": self.name, **{kind: getattr(self, kind) for kind, _ in KINDS}, "tokens": self.tokens,
                "cost": decimal_text(self.cost) if self.priced_tokens or not self.tokens else None,
                "priced_share": round(self.priced_tokens / self.tokens, 4) if self.tokens else None,
                "models": sorted(self.models)}


def period_of(day: str, by: str) -> str:
    """The period a UTC day (``YYYY-MM-DD``) falls in: the day, its week's Monday, or its month."""
    if by == "month":
        return day[:7]
    if by == "week":
        d = dt.date.fromisoformat(day)
        return (d - dt.timedelta(days=d.weekday())).isoformat()
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


def totals(summaries: Iterable[Mapping[str, Any]], by: str, since: str | None = None,
           until: str | None = None) -> tuple[list[Total], Total]:
    """The rows (oldest first; sessions by their first day) and the grand total of ``summaries``' usage,
    by ``by``; ``since``/``until`` (``YYYY-MM-DD``, both kept) choose the usage by its day."""
    chosen = list(summaries)
    roots = _roots(chosen) if by == "session" else {}
    rows: dict[str, Total] = {}
    first: dict[str, str] = {}
    total = Total("total")
    for s in chosen:
        for u in s.get("usage") or ():
            day = str(u.get("day") or "")
            if (since and day < since) or (until and day > until):
                continue
            name = roots.get(str(s.get("session_id")), str(s.get("session_id"))) if by == "session" else (
                period_of(day, by) if len(day) == 10 else "unknown")
            rows.setdefault(name, Total(name)).add(u)
            first[name] = min(first.get(name, day), day)
            total.add(u)
    order = sorted(rows, key=lambda n: (first[n], n)) if by == "session" else sorted(rows)
    return [rows[n] for n in order], total


def format_totals(rows: list[Total], total: Total, by: str) -> str:
    """The rows and the total as a terminal table (under 80 columns but for a session's id)."""
    heads = [by, *(h for _, h in KINDS), "all tokens", "cost"]
    cells = [[clip(r.name, 40), *(f"{getattr(r, k):,}" for k, _ in KINDS), f"{r.tokens:,}",
              money(r.cost, r.priced_tokens, r.tokens)] for r in [*rows, total]]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(heads)]
    lines = ["  ".join([heads[0].ljust(widths[0]), *(h.rjust(w) for h, w in zip(heads[1:], widths[1:], strict=True))])]
    for i, c in enumerate(cells):
        if i == len(cells) - 1:
            lines.append("-" * len(lines[0]))
        lines.append("  ".join([c[0].ljust(widths[0]), *(x.rjust(w) for x, w in zip(c[1:], widths[1:], strict=True))]))
    return "\n".join(lines)
