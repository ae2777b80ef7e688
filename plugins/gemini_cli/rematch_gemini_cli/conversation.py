"""A Gemini CLI session's conversation items (the ``conversation_items`` hook): what was said and shown.

The session's own translator (:mod:`.translate`) reads the records: its rules decide
which statement of a message rewritten by id is the message, which user messages a
person typed (not the injected context), which calls are new in a restated message,
and when the session opens. Its neutral records are turned into items here; the one
thing the trace cuts (a call's output, kept as a head) is taken whole from where the
translator read it. A subagent's call names the session it started (``agentId``, 0.61.0):
a :class:`Spawned`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rematch_trace.host.conversation import Called, Item, Returned, Said, Spawned
from rematch_trace.host.source import RawRecord, Source
from rematch_trace.host.text import clean
from rematch_trace.host.vocab import AssistantMessage, Neutral, Session, ToolResult, UserMessage

from .translate import _Translator


class _Reader(_Translator):
    """The translator, keeping each call's whole output text beside the head the trace gets."""

    def __init__(self, source: Source) -> None:
        super().__init__(source, {})
        #: Call id -> its whole output or error text, until its item is given.
        self.whole: dict[str, str] = {}
        #: Call id -> the subagent session it started (a finished call's ``agentId``), until given.
        self.agents: dict[str, str] = {}

    def _calls(self, m: dict[str, Any], first: bool = False, model: Any = None) -> Iterator[Neutral]:
        listed = m.get("toolCalls")
        for tc in listed if isinstance(listed, list) else ():
            if isinstance(tc, dict) and isinstance(tc.get("id"), str) and isinstance(tc.get("agentId"), str):
                self.agents[tc["id"]] = tc["agentId"]
        return super()._calls(m, first, model)

    def _result(self, t: int | None, cid: str, out: str, is_error: bool | None, tool: str | None) -> ToolResult:
        self.whole[cid] = out
        return super()._result(t, cid, out, is_error, tool)


def _part_way(records: Iterator[RawRecord], reader: _Reader) -> Iterator[RawRecord]:
    """``records``; when they start past the session's metadata (the search index reading a grown
    log on), the session counts as opened already (its items belong to the session opened before),
    and a ``$set`` of messages (a resume restating the history) is passed over: every message it
    restates was written earlier, before where the reading starts or on a line read since."""
    part_way = False
    first = True
    for rec in records:
        if first:
            first = False
            if rec.offset > 0 and not reader.document:
                part_way = True
                reader.state["meta"] = ["", None, "", False, None]
                reader.state["open"] = 1
        v = rec.value
        if part_way and isinstance(v, dict) and isinstance(v.get("$set"), dict) and "messages" in v["$set"]:
            continue
        yield rec


def items(source: Source, records: Iterator[RawRecord]) -> Iterator[Item]:
    """The items of ``records``, in the order the translator gives the messages."""
    reader = _Reader(source)
    for rec in reader.run(_part_way(records, reader)):
        if isinstance(rec, Session):
            yield rec
        elif isinstance(rec, UserMessage):
            if rec.text.strip():
                yield Said(rec.stream, rec.t, "user", rec.text)
        elif isinstance(rec, AssistantMessage):
            if rec.text.strip():
                yield Said(rec.stream, rec.t, "assistant", rec.text)
            for call in rec.tool_calls:
                yield Called(rec.stream, rec.t, call.id, call.name, _input(call.input))
        elif isinstance(rec, ToolResult):
            out = reader.whole.pop(rec.call_id, rec.output_head or "")
            yield Returned(rec.stream, rec.t, rec.call_id, out, rec.is_error)
            agent = reader.agents.pop(rec.call_id, "")
            if agent:
                yield Spawned(rec.stream, rec.t, rec.call_id, clean(agent))


def _input(value: Any) -> Any:
    return value if value is not None else {}

