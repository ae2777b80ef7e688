"""An opencode session's conversation items (the ``conversation_items`` hook): what was said and shown.

The records are :mod:`.store`'s (a session, then its messages with their parts), and the
rules are the translator's (:mod:`.translate`): the session record, which text a person
typed, which text the model wrote, a tool part's outcome. The items follow the parts in
their order, so the assistant's text stays between the calls it was written between, and
each output is whole (the trace keeps a head). A ``task`` call names the subagent session
it started in its ``metadata.sessionId``: a :class:`Spawned`.

Unlike the translation, a message opencode is still writing is given as it stands: the
view shows what the store holds now, and the translator's held-back rule is about not
importing a message twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rematch_trace.host.conversation import Called, Compacted, Item, Returned, Said, Spawned
from rematch_trace.host.source import RawRecord, Source

from . import where
from .translate import _ms, _obj, _str, _time, entries, said, session_record, tool_outcome, user_text


def items(source: Source, records: Iterator[RawRecord]) -> Iterator[Item]:
    """The items of a database (one stream per session, its id) or of one tree session (stream ``""``)."""
    database = where.is_database(source.path)
    for sid, doc, parts in entries(records):
        if sid is None or doc is None:
            continue  # a session record that names no session
        if parts is None:
            yield session_record(sid if database else "", doc)
        else:
            yield from _message(sid if database else "", doc, [p for p in parts if isinstance(p, dict)])


def _compacted(stream: str, t: int | None, part: dict[str, Any]) -> Compacted:
    return Compacted(stream, t, "auto" if part.get("auto") else "manual")


def _message(stream: str, msg: dict[str, Any], parts: list[dict[str, Any]]) -> Iterator[Item]:
    role = msg.get("role")
    t = _time(msg)
    if role == "user":
        for p in parts:
            if p.get("type") == "compaction":
                yield _compacted(stream, t, p)
        text = user_text(parts)
        if text.strip():
            yield Said(stream, t, "user", text)
        return
    if role != "assistant":
        return
    for p in parts:
        typ = p.get("type")
        if typ == "compaction":
            yield _compacted(stream, t, p)
        elif said(p):
            text = _str(p.get("text"))
            if text.strip():
                yield Said(stream, _ms(_obj(p.get("time")).get("start")) or t, "assistant", text)
        elif typ == "tool" and isinstance(p.get("callID"), str):
            cid = p["callID"]
            state = _obj(p.get("state"))
            began = _ms(_obj(state.get("time")).get("start")) or t
            tool_input = state.get("input")
            yield Called(stream, began, cid, _str(p.get("tool")) or "unknown",
                         tool_input if tool_input is not None else {})
            done = tool_outcome(p)
            if done is not None:
                text, failed, _, end = done
                yield Returned(stream, end or began, cid, text, failed)
            child = _obj(state.get("metadata")).get("sessionId")
            if p.get("tool") == "task" and isinstance(child, str) and child:
                yield Spawned(stream, began, cid, child)
