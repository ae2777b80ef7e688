"""A Claude Code transcript's conversation items (the ``conversation_items`` hook): what was said and shown.

The file's own translator runs alongside, so the streams (a 1.0 file's inline
sidechains), the session ids, and the lines the trace leaves out (a resumed
session's copies of another session's lines, repeated lines) are decided
exactly as for the trace. A message split over lines (one content block each)
gives its pieces in file order, so the assistant's text stays between the
calls it was written between.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rematch_trace.host.conversation import Called, Compacted, Item, Returned, Said, Spawned
from rematch_trace.host.source import RawRecord, Source
from rematch_trace.host.timestamps import iso_ms
from rematch_trace.host.vocab import Session

from .translate import _Translator
from .usertext import classify, strip_context

#: Message ids whose blocks were already given, per stream (a message is sometimes written again whole).
_MAX_SEEN = 4096


def items(source: Source, records: Iterator[RawRecord]) -> Iterator[Item]:
    """The items of ``records``, in file order."""
    tr = _Translator(source, {})
    out: list[Any] = []
    seen: dict[tuple[str, str], None] = {}
    for rec in records:
        v = rec.value
        if type(v) is not dict:
            continue
        own = tr.st["own"]
        sid = v.get("sessionId")
        uuid = v.get("uuid")
        skip = (type(sid) is str and own is not None and sid != own) or (
            type(uuid) is str and uuid in tr.recent.counts)
        tr.at = [rec.offset, rec.end]
        tr.line(v, out)
        for r in out:
            if isinstance(r, Session):
                yield r
        out.clear()
        if skip:
            continue
        key = "" if tr.sub or v.get("isSidechain") is not True else str(tr.st["scl"])
        typ = v.get("type")
        t = iso_ms(v.get("timestamp"))
        if typ == "assistant":
            yield from _assistant(key, t, v, seen)
        elif typ == "user":
            yield from _user(key, t, v, tr)
        elif typ == "system" and v.get("subtype") == "compact_boundary":
            meta = v.get("compactMetadata")
            trigger = meta.get("trigger") if type(meta) is dict else None
            yield Compacted(key, t, trigger if type(trigger) is str else "")
        elif typ == "attachment":
            att = v.get("attachment")
            if type(att) is dict and att.get("type") == "queued_command" and type(att.get("prompt")) is str:
                kind, text = classify(att["prompt"])
                if kind == "input":
                    yield Said(key, t, "user", text)
        if len(seen) > _MAX_SEEN:
            del seen[next(iter(seen))]


def _assistant(key: str, t: int | None, v: dict[str, Any], seen: dict[tuple[str, str], None]) -> Iterator[Item]:
    msg = v.get("message")
    content = msg.get("content") if type(msg) is dict else None
    mid = msg.get("id") if type(msg) is dict and type(msg.get("id")) is str else ""
    for block in content if type(content) is list else []:
        if type(block) is not dict:
            continue
        bt = block.get("type")
        if bt == "text" and type(block.get("text")) is str and block["text"].strip():
            mark = (key, f"{mid}\x00{block['text']}")
            if mid and mark in seen:
                continue
            seen[mark] = None
            yield Said(key, t, "assistant", block["text"])
        elif bt == "tool_use" and type(block.get("id")) is str:
            mark = (key, block["id"])
            if mark in seen:
                continue
            seen[mark] = None
            name = block.get("name")
            yield Called(key, t, block["id"], name if type(name) is str else "unknown", block.get("input"))


def _user(key: str, t: int | None, v: dict[str, Any], tr: _Translator) -> Iterator[Item]:
    msg = v.get("message")
    content = msg.get("content") if type(msg) is dict else None
    if type(content) is str:
        content = [{"type": "text", "text": content}]
    if type(content) is not list:
        return
    texts = [b["text"] for b in content if type(b) is dict and b.get("type") == "text" and type(b.get("text")) is str]
    results = [b for b in content if type(b) is dict and b.get("type") == "tool_result"]
    if results:
        detail = v.get("toolUseResult") if len(results) == 1 else None
        for block in results:
            cid = block.get("tool_use_id")
            if type(cid) is not str or not cid:
                continue
            yield Returned(key, t, cid, _result_text(block.get("content")), block.get("is_error") is True)
            agent = detail.get("agentId") if type(detail) is dict else None
            own = tr.st["own"]
            if type(agent) is str and agent and own:
                yield Spawned(key, t, cid, f"{own}.agent-{agent}")
        return
    if v.get("isCompactSummary") is True:
        yield Compacted(key, t, "", "\n".join(texts))
        return
    if v.get("isMeta") is True or v.get("isVisibleInTranscriptOnly") is True:
        return
    kept = [x for x in map(strip_context, texts) if x]
    if not kept:
        return
    kind, text = classify("\n".join(kept))
    if kind in ("input", "command", "bash") and text.strip():
        yield Said(key, t, "user", text)


def _result_text(content: Any) -> str:
    """A tool result's text: a string, or its text blocks (an image as ``[image]``)."""
    if type(content) is str:
        return content
    parts = []
    for b in content if type(content) is list else []:
        if type(b) is dict:
            if type(b.get("text")) is str:
                parts.append(b["text"])
            elif b.get("type") in ("image", "document"):
                parts.append(f"[{b['type']}]")
    return "\n".join(parts)
