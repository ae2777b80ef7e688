"""The report's pages: a Jinja2 environment with autoescape, and the views its templates iterate.

Every value a template prints goes through :func:`visible` first (the
environment's ``finalize``) and is then HTML-escaped by autoescape: control
characters, bidirectional overrides, zero-width characters and lone
surrogates are shown as ``\\uXXXX`` instead of acting on the page. Data for
the page's script goes out with Jinja2's ``tojson``, which escapes ``<``,
``>``, ``&`` and ``'`` so it cannot close its ``<script type="application/json">``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import jinja2
import orjson

from rematch_trace.report.prices import Price, PriceTable
from rematch_trace.report.summary import model_name, reason_seqs, trace_records, turn_cost
from rematch_trace.report.text import duration, money, tokens, visible, when
from rematch_trace.trace.flags import CLUSTER_ERRORS, CLUSTER_WINDOW

#: What each flag reason means, shown beside the seqs behind it.
REASON_TEXT: dict[str, str] = {
    "redirect": "an input prelabelled interrupt, revert, negation or reprompt: the user turned the agent around",
    "error_cluster": f"at least {CLUSTER_ERRORS} failed tool calls among {CLUSTER_WINDOW} consecutive results",
    "mark": "an explicit mark, or an input prelabelled mark:<class>",
}

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "base-uri 'none'; form-action 'none'")


def environment() -> jinja2.Environment:
    """The templates, autoescaped, every printed value through :func:`visible`."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("rematch_trace.report", "templates"),
        autoescape=True,
        finalize=visible,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    from rematch_trace.report.markdown import edit_diff, markdown

    env.filters.update(when=when, duration=duration, tokens=tokens, money=money, markdown=markdown,
                       edit_diff=edit_diff)
    env.globals.update(CSP=CSP, REASON_TEXT=REASON_TEXT, money=money)
    # Sorted keys make the embedded data, and so the page, byte-identical from run to run.
    env.policies["json.dumps_kwargs"] = {"sort_keys": True, "ensure_ascii": True}
    return env


def _compact(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except (orjson.JSONEncodeError, TypeError):
        return repr(value)


def _model(value: Any) -> str:
    if isinstance(value, Mapping):
        return f"{value.get('provider') or ''}/{value.get('id') or ''}".strip("/") or "?"
    return "?"


def _long(text: str, limit: int, lines: int) -> bool:
    """Whether the page collapses ``text``: longer than ``limit`` characters or ``lines`` lines."""
    return len(text) > limit or text.count("\n") > lines


#: Record kinds with a style of their own (anything else is styled as "other").
_KINDS = frozenset({"input", "tool_result", "turn_end", "model_change", "mark", "agent_end", "tool_blocked",
                   "session_start", "session_shutdown", "retrieval"})


def timeline(trace: Path, why: Mapping[int, list[str]], prices: PriceTable) -> Iterator[dict[str, Any]]:
    """One view per trace record, streamed: what the session page's timeline shows.

    ``why`` maps a seq to the flag reasons it stands behind. A view holds the
    record's seq, time, kind, flag reasons, a headline, badges, and the long
    text or arguments the template collapses. A turn shows its cost (stated, or
    priced from ``prices``; ``no price`` for a model the table does not know).
    """
    last_day = None
    current: str | None = None
    price_of: dict[str, Price | None] = {}
    for rec in trace_records(trace):
        if not rec:
            yield {"seq": None, "ev": "unreadable", "label": "unreadable", "cls": "ev-unreadable", "reasons": [],
                   "text_long": False, "code_long": False, "date": None, "time": "-",
                   "head": "a line of the trace could not be read", "badges": [], "text": None, "code": None}
            continue
        ev = str(rec.get("ev") or "?")
        seq = rec.get("seq") if type(rec.get("seq")) is int else None
        t = rec.get("t")
        day = when(t, "%Y-%m-%d")
        view: dict[str, Any] = {
            "seq": seq, "ev": ev, "label": ev.replace("_", " "), "cls": f"ev-{ev if ev in _KINDS else 'other'}" + (" hl" if seq in why else ""), "reasons": why.get(seq, []) if seq is not None else [],
            "date": day if day != last_day else None, "time": when(t, "%H:%M:%S"),
            "head": "", "badges": [], "text": None, "code": None,
        }
        last_day = day
        badges: list[tuple[str, str]] = view["badges"]
        if ev == "input":
            label = str(rec.get("prelabel") or "none")
            if label != "none":
                badges.append((label, "label"))
            if rec.get("source"):
                badges.append((str(rec.get("source")), "muted"))
            for skill in rec.get("skills_invoked") or []:
                badges.append((f"/{skill}", "skill"))
            view["text"] = str(rec.get("text") or "")
        elif ev == "tool_result":
            view["head"] = str(rec.get("tool") or "?")
            if rec.get("is_error") is True:
                badges.append((f"error: {rec.get('error_class') or 'unclassified'}", "error"))
            else:
                badges.append(("ok", "ok"))
            badges.append((f"{rec.get('result_bytes') or 0:,} B", "muted"))
            view["code"] = _compact(rec.get("input"))
        elif ev == "turn_end":
            u = rec.get("usage") if isinstance(rec.get("usage"), Mapping) else {}
            assert isinstance(u, Mapping)
            name = model_name(rec.get("model")) or current or "unknown"
            view["head"] = name
            badges.append((f"{tokens(u.get('totalTokens') or 0)} tok", "muted"))
            if name not in price_of:
                price_of[name] = prices.lookup(name)
            cost = turn_cost(u, price_of[name])
            badges.append((f"${cost:.4f}" if cost is not None else "no price", "muted"))
            if rec.get("stop_reason"):
                badges.append((str(rec.get("stop_reason")), "muted"))
            view["text"] = str(rec.get("text_head") or "") or None
        elif ev == "model_change":
            current = model_name(rec.get("to")) or current
            view["head"] = f"{_model(rec.get('from'))} → {_model(rec.get('to'))}"
            if rec.get("reason"):
                badges.append((str(rec.get("reason")), "muted"))
        elif ev == "mark":
            view["head"] = str(rec.get("class") or "")
            view["text"] = str(rec.get("note") or "") or None
        elif ev == "agent_end":
            view["head"] = f"{rec.get('turns')} turn(s)"
            if rec.get("yielded"):
                badges.append(("yielded", "muted"))
        elif ev == "tool_blocked":
            view["head"] = str(rec.get("tool") or "?")
            badges.append((f"blocked by {rec.get('hook_id')}", "error"))
            view["text"] = str(rec.get("reason") or "") or None
        elif ev == "session_start":
            current = model_name(rec.get("model"))
            agent = rec.get("agent") if isinstance(rec.get("agent"), Mapping) else {}
            assert isinstance(agent, Mapping)
            view["head"] = f"{agent.get('name') or '?'} ({agent.get('kind') or '?'}) in {rec.get('cwd') or '?'}"
            if rec.get("model"):
                badges.append((_model(rec.get("model")), "muted"))
        elif ev == "session_shutdown":
            reasons = rec.get("reasons") or []
            view["head"] = "flagged: " + ", ".join(map(str, reasons)) if rec.get("flagged") else "not flagged"
        else:
            view["code"] = _compact({k: v for k, v in rec.items() if k not in ("seq", "t", "ev")})
        text, code = view["text"], view["code"]
        # Which texts the page collapses: an input is read whole more often than a turn's head.
        view["text_long"] = text is not None and _long(text, 1500 if ev == "input" else 480,
                                                       16 if ev == "input" else 8)
        view["code_long"] = code is not None and _long(code, 240, 2)
        yield view


def flag_reasons_by_seq(row: Mapping[str, Any]) -> dict[int, list[str]]:
    """Seq -> the flag reasons it stands behind, from a ledger row."""
    why: dict[int, list[str]] = {}
    for reason, seqs in reason_seqs(row).items():
        for seq in seqs:
            why.setdefault(seq, []).append(reason)
    return why


#: Characters of the long sections put in one file of a page's folder (a chunk: loaded when one of its
#: sections is first unfolded): a few chunks a page, each small to load.
CHUNK_CHARS = 256 * 1024
#: zlib's level for a chunk (the browser inflates it with ``DecompressionStream("deflate")``).
CHUNK_LEVEL = 6


class Parts:
    """The long sections of one session page (long texts, outputs, nested conversations, the timeline),
    kept out of the page: each is rendered as the page would show it, and the page holds in its place an
    empty ``<div class="lazy">`` that session.js fills when the section is unfolded.

    The sections go, in order, into chunks of about :data:`CHUNK_CHARS` characters, each written to the
    page's own folder as a script (``sessions/<key>/<digest>.js``) that hands its sections, compressed, to
    the page: a ``<script src>`` loads from ``file://`` where ``fetch`` of a sibling file is refused. The
    sections are HTML the templates escaped; the page parses them into a ``<template>`` (no script in them
    runs, and the pages' CSP allows no inline script or handler).
    """

    def __init__(self) -> None:
        self.chunks: list[list[str]] = [[]]
        self._size = 0
        self._files: list[tuple[str, bytes]] | None = None

    def __call__(self, html: Any) -> Any:
        """Keep ``html`` (a section the template rendered) for its chunk; the placeholder the page holds."""
        from markupsafe import Markup

        if self._size >= CHUNK_CHARS:
            self.chunks.append([])
            self._size = 0
        c, i = len(self.chunks) - 1, len(self.chunks[-1])
        text = str(html)
        self.chunks[-1].append(text)
        self._size += len(text)
        return Markup(f'<div class="lazy" data-c="{c}" data-i="{i}"></div>')

    def files(self) -> list[tuple[str, bytes]]:
        """Each chunk's file name (a digest of its content) and bytes, once every section is kept."""
        if self._files is None:
            import base64
            import hashlib
            import zlib

            out = []
            for chunk in self.chunks:
                if not chunk:
                    continue
                try:
                    blob = orjson.dumps(chunk)
                except orjson.JSONEncodeError:  # a lone surrogate (visible() escapes them: belt and braces)
                    blob = orjson.dumps([s.encode("utf-8", "backslashreplace").decode() for s in chunk])
                packed = base64.b64encode(zlib.compress(blob, CHUNK_LEVEL)).decode("ascii")
                name = hashlib.sha256(packed.encode()).hexdigest()[:20] + ".js"
                out.append((name, f'rematchPart("{name}","{packed}");\n'.encode()))
            self._files = out
        return self._files

    def names(self) -> list[str]:
        """The chunks' file names, in order (the page's map from a chunk's number to its file)."""
        return [name for name, _ in self.files()]
