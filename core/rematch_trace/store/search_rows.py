"""What one trace gives the search index, line by line: computed where the line is (the import's worker that
writes it, or the index reading a trace it was not handed), inserted by the index's one writer.

A row is ``(off, len, digest, kind, body, seq, t, call_id, turn_end)``: the line's byte span in its trace and
its digest (what a grown trace is checked back by), the kind and text indexed (``kind`` empty when the record
has no text: a ``tool_result`` is kept for its call id alone), the record's seq and time, its call id (a
``tool_result``'s, for the outputs' seqs) and whether it is an assistant turn's head (left out of a session
whose source gives the assistant's whole text).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

try:
    # hashlib's own BLAKE2 (it never takes OpenSSL's): imported without hashlib, whose OpenSSL start-up
    # ``rematch search`` would pay on every query for a digest it computes only when a trace changed.
    from _blake2 import blake2b
except ImportError:  # pragma: no cover (a Python built without it)
    from hashlib import blake2b

#: One conversation row before its stream is a trace key: ``(stream, kind, call_id, t, body)``; a stream's
#: opening is ``(stream, "session", session_id, None, "")``.
SaidRow = tuple[str, str, str | None, int | None, str]
#: What the import's reading of one source gives the index (:class:`~rematch_trace.importing.search_sources.ConversationRows`): the offset it read
#: from, the offset past the last whole record the plugin's hook took, the rows, whether the plugin failed.
Handed = tuple[int, int, list[SaidRow], bool]
#: One trace line's row (see the module docstring).
TraceRow = tuple[int, int, bytes, str, str, int | None, int | None, str | None, bool]
#: One trace's rows as they cross to the index's writer: (start, end, rows, started, session id, redacted
#: here, the committed trace's inode, size and mtime).
HandedTrace = tuple[int, int, list[TraceRow], int | None, str | None, bool, tuple[int, int, int]]


def digest(line: bytes) -> bytes:
    """The digest a line's span is checked by."""
    return blake2b(line, digest_size=16).digest()


def _flatten(value: Any, out: list[str], budget: list[int]) -> None:
    """The strings (and numbers) of a tool input, in order (its keys are names, not what was said)."""
    if budget[0] <= 0:
        return
    if isinstance(value, str):
        out.append(value)
        budget[0] -= len(value)
    elif isinstance(value, Mapping):
        for v in value.values():
            _flatten(v, out, budget)
    elif isinstance(value, list):
        for v in value:
            _flatten(v, out, budget)
    elif value is not None and not isinstance(value, bool):
        out.append(str(value))


def record_text(rec: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(kind, text)`` a trace record contributes to the index, or ``None`` (nothing searchable)."""
    ev = rec.get("ev")
    if ev == "input":
        text = rec.get("text")
        return ("prompt", text) if isinstance(text, str) and text.strip() else None
    if ev == "turn_end":
        text = rec.get("text_head")
        return ("assistant", text) if isinstance(text, str) and text.strip() else None
    if ev == "tool_result":
        parts = [str(rec.get("tool") or "")]
        _flatten(rec.get("input"), parts, [64 * 1024])
        return "tool", "\n".join(p for p in parts if p)
    if ev == "tool_blocked":
        return "blocked", f"{rec.get('tool') or ''}\n{rec.get('reason') or ''}"
    if ev == "mark":
        text = " ".join(str(rec.get(k)) for k in ("class", "note") if isinstance(rec.get(k), str))
        return ("mark", text) if text.strip() else None
    return None


def valid(text: str) -> str:
    """``text`` as SQLite takes it: lone surrogates spelled as escapes."""
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")


class TraceRows:
    """The index's rows of one trace's lines, fed in order (a consumer of the trace the import writes).

    ``redact``: applied to every text (a trace written without redaction is redacted here: the index never
    holds raw text). ``started`` and ``session_id`` are the ``session_start`` record's.
    """

    def __init__(self, start: int, redact: Callable[[str], Any] | None = None) -> None:
        #: The offset of the first line fed (the rows cover the trace from there to :attr:`end`).
        self.start = start
        self.end = start
        self.rows: list[TraceRow] = []
        self.started: int | None = None
        self.session_id: str | None = None
        self._redact = redact
        #: Set when the rows were dropped (too many to hold): the index reads the trace itself.
        self.given_up = False

    def feed(self, off: int, line: bytes, rec: Mapping[str, Any]) -> None:
        """Take one whole trace line at ``off`` (``rec`` is its record)."""
        self.end = off + len(line)
        if self.given_up:
            return
        ev = rec.get("ev")
        if ev == "session_start":
            t0 = rec.get("t")
            sid = rec.get("session_id")
            self.started = t0 if type(t0) is int else None
            self.session_id = sid if isinstance(sid, str) else None
        call = rec.get("call_id") if ev == "tool_result" else None
        seq = rec.get("seq") if type(rec.get("seq")) is int else None
        got = record_text(rec)
        # A row without text is still kept for a tool result's call id and for a turn's place (seq and t).
        turn = ev == "turn_end" and seq is not None and type(rec.get("t")) is int
        if got is None and not (isinstance(call, str) and seq is not None) and not turn:
            return
        kind, body = got if got is not None else ("", "")
        if got is not None and self._redact is not None:
            body = self._redact(body)[0]
        t = rec.get("t") if type(rec.get("t")) is int else None
        self.rows.append((off, len(line), digest(line) if got is not None else b"", kind, valid(body) if kind else "",
                          seq, t, call if isinstance(call, str) else None, ev == "turn_end"))

    def handed(self, stamp: tuple[int, int, int]) -> HandedTrace:
        """What crosses to the index's writer, for the trace committed with ``stamp`` (inode, size, mtime)."""
        return self.start, self.end, self.rows, self.started, self.session_id, self._redact is not None, stamp
