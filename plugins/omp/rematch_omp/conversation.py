"""An omp / pi session's conversation items (the ``conversation_items`` hook): what was said and shown.

A ``task`` call's subagents: omp writes each one's session to ``<artifacts dir>/<id>.jsonl``, the
artifacts dir being the parent's file name less ``.jsonl``, and names that ``id`` in the call's
result: ``details.results[i].id`` when the call waited for them, ``details.progress[i].id`` when
it started them in the background (omp 18's default, ``async.enabled``: ``results`` is then
empty). The subagent's session id is its file's header ``id``, so
each result whose file is there yields a :class:`~rematch_trace.host.conversation.Spawned`; a
result whose file is not (deleted, not yet written) yields none: no call is guessed. pi has no
``task`` tool.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rematch_trace.host.conversation import Called, Compacted, Item, Returned, Said, Spawned
from rematch_trace.host.source import RawRecord, Source
from rematch_trace.host.timestamps import iso_ms
from rematch_trace.host.vocab import UserMessage

from .discover import SUFFIXES, stem
from .translate import _parent_session_id, _runtime_version, _session, _skill_prompt, _user, text_of
from .tree import is_header


def items(source: Source, records: Iterator[RawRecord]) -> Iterator[Item]:
    """The items of ``records`` (the active branch on a full read), in order."""
    for rec in records:
        v = rec.value
        if not isinstance(v, dict):
            continue
        typ = v.get("type")
        if typ == "session":
            if is_header(v):
                yield _session(source, v, _runtime_version(v))
            continue
        t = iso_ms(v.get("timestamp"))
        if typ == "message":
            m = v.get("message")
            if isinstance(m, dict):
                if t is None and type(m.get("timestamp")) is int:
                    t = m["timestamp"]
                yield from _message(m, t)
                if m.get("role") == "toolResult" and m.get("toolName") == "task":
                    yield from _task_subagents(source.path, m, t)
        elif typ == "custom_message" and v.get("customType") == "skill-prompt":
            prompt = _skill_prompt(v, t)
            if isinstance(prompt, UserMessage) and prompt.text.strip():
                yield Said("", t, "user", prompt.text)
        elif typ == "compaction":
            method, summary = v.get("method"), v.get("summary")
            yield Compacted("", t, method if isinstance(method, str) else "",
                            summary if isinstance(summary, str) else "")


def _message(m: dict[str, Any], t: int | None) -> Iterator[Item]:
    role = m.get("role")
    if role == "assistant":
        content = m.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for b in content if isinstance(content, list) else []:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "text" and isinstance(b.get("text"), str) and b["text"].strip():
                yield Said("", t, "assistant", b["text"])
            elif b.get("type") == "toolCall" and isinstance(b.get("id"), str) and isinstance(b.get("name"), str):
                args = b.get("arguments")
                yield Called("", t, b["id"], b["name"], args if args is not None else {})
    elif role == "toolResult":
        cid = m.get("toolCallId")
        if isinstance(cid, str):
            flag = m.get("isError")
            yield Returned("", t, cid, text_of(m.get("content")), flag if isinstance(flag, bool) else None)
    elif role == "user":
        user = _user(m, t)
        if user is not None and user.text.strip():
            yield Said("", t, "user", user.text)
    elif role == "bashExecution" and isinstance(m.get("command"), str):
        yield Said("", t, "user", "!" + m["command"])
        output = m.get("output")
        if isinstance(output, str) and output:
            yield Returned("", t, "", output, None)


def _task_subagents(parent: Path, m: dict[str, Any], t: int | None) -> Iterator[Item]:
    """The subagents a ``task`` call's result names whose session files are beside ``parent``."""
    cid, details = m.get("toolCallId"), m.get("details")
    if not isinstance(cid, str) or not isinstance(details, dict):
        return
    named = [r for key in ("results", "progress") if isinstance(details.get(key), list) for r in details[key]]
    folder = parent.parent / stem(parent)
    seen: set[str] = set()
    for r in named:
        agent = r.get("id") if isinstance(r, dict) else None
        # An id is a file name omp made in that folder: one that could reach out of it is no subagent's.
        if not isinstance(agent, str) or not agent or agent in seen or agent.startswith(".") \
                or "/" in agent or "\\" in agent or "\0" in agent:
            continue
        seen.add(agent)
        for suffix, _ in SUFFIXES:
            path = folder / (agent + suffix)
            if path.is_file():
                sid = _parent_session_id(path)  # reads the header id of any session file
                if sid:
                    yield Spawned("", t, cid, sid)
                break
