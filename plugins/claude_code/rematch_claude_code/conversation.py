"""A Claude Code transcript's conversation items (the ``conversation_items`` hook): what was said and shown.

The file's own translator's rules decide the streams (a 1.0 file's inline
sidechains) and the session ids, and the lines left out are the trace's (a
resumed session's copies of another session's lines, repeated lines). A message split over lines (one content block each)
gives its pieces in file order, so the assistant's text stays between the
calls it was written between.

A subagent is started by a ``Task`` (later ``Agent``) call. Since 1.0's successors the call's
result names the agent's file (``toolUseResult.agentId``); a 1.0 file keeps the agent inline as a
sidechain whose first line is a user message holding the call's ``prompt`` word for word, and no
id of the call. That text is the link: a sidechain opening with the prompt of a call not yet
linked is that call's (two calls with the same prompt: the earlier call, the earlier sidechain).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

from rematch_trace.host.conversation import Called, Compacted, Item, Returned, Said, Spawned
from rematch_trace.host.source import RawRecord, Source
from rematch_trace.host.text import clean
from rematch_trace.host.timestamps import iso_ms

from .translate import _HANDLED, _Translator
from .usertext import classify, strip_context

#: Message ids whose blocks were already given, per stream (a message is sometimes written again whole).
_MAX_SEEN = 4096
#: The tools that start a subagent (``Task`` until 2.1, ``Agent`` since).
SPAWNING = ("Task", "Agent")


def items(source: Source, records: Iterator[RawRecord]) -> Iterator[Item]:
    """The items of ``records``, in file order."""
    # The translator's state and its session and sidechain rules, without translating: its `line`
    # would cost as much again as reading the file.
    tr = _Translator(source, {})
    st = tr.st
    opened: set[str] = set()
    seen: dict[tuple[str, str], None] = {}
    uuids: dict[str, None] = {}
    # A main-stream Task call's prompt (its digest: a prompt may be megabytes) -> its calls not yet
    # linked to a sidechain, oldest first.
    prompts: dict[bytes, list[str]] = {}
    for rec in records:
        v = rec.value
        if type(v) is not dict:
            continue
        typ = v.get("type")
        if typ not in _HANDLED:
            continue
        sid = v.get("sessionId")
        if type(sid) is str:
            sid = clean(sid)
            if st["own"] is None:
                st["own"] = sid
            elif sid != st["own"]:
                continue  # a resumed session's copy of another session's line
        uuid = v.get("uuid")
        if type(uuid) is str:
            if uuid in uuids:
                continue  # a line written again
            uuids[uuid] = None
            if len(uuids) > _MAX_SEEN:
                del uuids[next(iter(uuids))]
        if not st["cwd"] and type(v.get("cwd")) is str:
            st["cwd"] = clean(v["cwd"])
        if st["ver"] is None and type(v.get("version")) is str and v["version"]:
            st["ver"] = clean(v["version"])
        key = "" if tr.sub or v.get("isSidechain") is not True else tr._chain_key(v, typ)
        t = iso_ms(v.get("timestamp"))
        if key not in opened:
            opened.add(key)
            session = tr._session(key, t)
            yield session
            call = _spawner(prompts, v) if key and typ == "user" else None
            if call is not None:
                yield Spawned("", t, call, session.session_id)
        if typ == "assistant":
            for item in _assistant(key, t, v, seen):
                if not key and isinstance(item, Called) and item.name in SPAWNING and type(item.input) is dict:
                    prompt = item.input.get("prompt")
                    if type(prompt) is str and len(prompts) < _MAX_SEEN:
                        prompts.setdefault(_digest(prompt), []).append(item.call_id)
                yield item
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
    if "" not in opened:
        yield tr._session("", None)


def _digest(text: str) -> bytes:
    """What a prompt is known by while it waits for its sidechain (lone surrogates kept as they are)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _spawner(prompts: dict[bytes, list[str]], v: dict[str, Any]) -> str | None:
    """The Task call whose prompt is the text of ``v``, the user line that opens a sidechain (and is
    then linked), or ``None``."""
    msg = v.get("message")
    content = msg.get("content") if type(msg) is dict else None
    if type(content) is str:
        text = content
    elif type(content) is list:
        text = "\n".join(b["text"] for b in content
                         if type(b) is dict and b.get("type") == "text" and type(b.get("text")) is str)
    else:
        return None
    key = _digest(text)
    calls = prompts.get(key)
    if not calls:
        return None
    call = calls.pop(0)
    if not calls:
        del prompts[key]
    return call


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
