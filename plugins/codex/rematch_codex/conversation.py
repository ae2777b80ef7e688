"""A Codex rollout's conversation items (the ``conversation_items`` hook): what was said and shown.

The rollout's own translator runs alongside, so the session id, and the copied
history a fork or subagent starts with (not this session's words), are decided
exactly as for the trace.

A subagent is placed under the call that started it from what the parent's rollout says of it:
the ``spawn_agent`` call's own output (``{"agent_id": <the child's thread id>, ...}``, which
Codex writes for every multi-agent version) and the events some versions add (an
``item_completed`` ``CollabAgentToolCall`` whose ``tool`` is ``spawn_agent``, naming its
``receiver_thread_ids``; ``collab_agent_spawn_end`` with ``new_thread_id``). The child's thread id
is its session id. ``wait_agent``, ``send_input`` and the others name a thread they did not start:
they start nothing here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from rematch_trace.host.conversation import Called, Compacted, Item, Returned, Said, Spawned
from rematch_trace.host.source import RawRecord, Source
from rematch_trace.host.timestamps import iso_ms
from rematch_trace.host.vocab import Session

from . import results, usertext
from .translate import _CALL_ITEMS, _OUTPUT_ITEMS, STREAM, _call_input, _message_text, _Translator


def items(source: Source, records: Iterator[RawRecord]) -> Iterator[Item]:
    """The items of ``records``, in file order."""
    tr = _Translator(source, {})
    spawns: set[str] = set()  # the call ids of the spawn_agent calls read so far
    for rec in records:
        v = rec.value
        if not isinstance(v, dict):
            continue
        tr.line(rec)
        for out in tr.out:
            if isinstance(out, Session):
                yield out
        tr.out.clear()
        if tr.s["copy"]:
            continue  # the parent's history, copied: said in the parent's session
        payload = v.get("payload") if "payload" in v else v
        if not isinstance(payload, dict):
            continue
        kind = v.get("type")
        t = iso_ms(v.get("timestamp"))
        if kind == "compacted":
            msg = payload.get("message")
            yield Compacted(STREAM, t, "", msg if isinstance(msg, str) else "")
            continue
        if kind == "event_msg":
            yield from _spawn_event(payload, t)
            continue
        if kind not in ("response_item", None) and "payload" in v:
            continue
        for said in _item(payload, t, rec):
            yield said
            if isinstance(said, Called) and _is_spawn(said.name):
                spawns.add(said.call_id)
            elif isinstance(said, Returned) and said.call_id in spawns:
                child = _spawned_thread(said.output)
                if child is not None:
                    yield Spawned(STREAM, t, said.call_id, child)


def _is_spawn(name: str) -> bool:
    """Whether a call of this name starts a subagent (``spawn_agent``, in any tool namespace)."""
    return name == "spawn_agent" or name.endswith((".spawn_agent", "_spawn_agent"))


def _spawned_thread(text: str) -> str | None:
    """The child thread id a ``spawn_agent`` output names (``{"agent_id": ...}``), else ``None``."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    child = doc.get("agent_id") if isinstance(doc, dict) else None
    return child if isinstance(child, str) and child else None


def _spawn_event(p: dict[str, Any], t: int | None) -> Iterator[Item]:
    """The subagents an ``event_msg`` says a call started (the versions that write these events)."""
    typ = p.get("type")
    if typ == "item_completed":
        item = p.get("item")
        if not isinstance(item, dict) or item.get("type") != "CollabAgentToolCall" or item.get("tool") != "spawn_agent":
            return
        cid, children = item.get("id"), item.get("receiver_thread_ids")
        if isinstance(cid, str) and cid and isinstance(children, list):
            for child in children:
                if isinstance(child, str) and child:
                    yield Spawned(STREAM, t, cid, child)
    elif typ == "collab_agent_spawn_end":
        cid, child = p.get("call_id"), p.get("new_thread_id")
        if isinstance(cid, str) and cid and isinstance(child, str) and child:
            yield Spawned(STREAM, t, cid, child)


def _item(p: dict[str, Any], t: int | None, rec: RawRecord) -> Iterator[Item]:
    typ = p.get("type")
    if typ == "message":
        role = p.get("role")
        if role == "assistant":
            text = _message_text(p)
            if text.strip():
                yield Said(STREAM, t, "assistant", text)
        elif role == "user":
            typed = []
            content = p.get("content")
            for part in content if isinstance(content, list) else []:
                said = part.get("text") if isinstance(part, dict) else None
                if isinstance(said, str):
                    what, body = usertext.classify(said)
                    if what == "typed":
                        typed.append(body)
            if typed:
                yield Said(STREAM, t, "user", "\n".join(typed))
    elif typ in _CALL_ITEMS:
        name = p.get("name")
        if typ == "local_shell_call":
            name = "local_shell"
        elif typ == "web_search_call":
            name = "web_search"
        elif typ == "image_generation_call":
            name = "image_generation"
        elif typ == "tool_search_call":
            name = "tool_search"
        elif typ == "function_call":
            namespace = p.get("namespace")
            if isinstance(namespace, str) and namespace and isinstance(name, str):
                name = namespace + name if namespace.endswith("_") else f"{namespace}.{name}"
        name = name if isinstance(name, str) and name else "unknown"
        cid = p.get("call_id") or p.get("id")
        if not isinstance(cid, str) or not cid:
            cid = f"{name}@{rec.offset}"  # as the translator names a call without an id
        yield Called(STREAM, t, cid, name, _call_input(p))
        if typ in ("web_search_call", "image_generation_call"):
            result = p.get("result")
            status = p.get("status")
            if isinstance(result, str) or isinstance(status, str):
                yield Returned(STREAM, t, cid, result if isinstance(result, str) else "",
                               status in ("failed", "incomplete"))
    elif typ in _OUTPUT_ITEMS:
        cid = p.get("call_id")
        if isinstance(cid, str) and cid:
            raw = p.get("output")
            text = results.output_text(raw)
            failed, _ = results.classify_output(text, raw)
            yield Returned(STREAM, t, cid, text, failed)
