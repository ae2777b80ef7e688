"""omp session entries -> the core's neutral vocabulary.

The records arrive already reduced to the active branch (see :mod:`.tree`), in
file order. Each entry becomes at most a few neutral records:

* the header -> :class:`~rematch_trace.host.vocab.Session`;
* a ``user`` message not attributed to the agent -> ``UserMessage`` (``developer``
  messages are agent prompts, never a person's);
* a user-attributed ``skill-prompt`` custom message -> ``UserMessage`` carrying the
  skill (omp stores the rendered skill, not the typed ``/skill:`` text); an
  agent-attributed one -> ``SkillInvoked``;
* ``bashExecution`` / ``pythonExecution`` -> the ``!`` / ``%`` line the user typed
  (the core drops those lines);
* ``assistant`` -> ``AssistantMessage``; ``toolResult`` -> ``ToolResult``;
* ``compaction`` -> ``Compaction``; a subagent's ``session_init`` prompt -> ``Instructions``.

Everything else (settings changes, labels, custom entries, unknown types) is a
tree node with nothing to say to the trace.

State (``state``) holds the format version, the session id and the id of the last
entry seen (the leaf). On a resume the new entries must hang off that leaf, as
every omp append does; an entry that does not (a ``/tree`` branch switch, a
rewritten file) raises :class:`~rematch_trace.errors.RestartImport`, and the core
re-imports the file so the active branch is recomputed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rematch_trace.errors import RestartImport
from rematch_trace.host.source import RawRecord, Source
from rematch_trace.host.text import utf8_len
from rematch_trace.host.timestamps import iso_ms
from rematch_trace.host.vocab import (
    OUTPUT_HEAD_CHARS,
    AssistantMessage,
    Compaction,
    Instructions,
    ModelRef,
    Neutral,
    Session,
    SkillInvoked,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from rematch_trace.importing.reader import loads, open_source

from .discover import stem
from .tree import format_version, is_header

# The bash tool ends a failed command's output with its fate.
_BASH_FATE = re.compile(r"Command (?:exited with code (-?\d+)|(aborted)|(timed out))\b[^\n]*\s*$")
# omp 5's ``/skill:`` was a plain user message: "<body>\n\n---\n\nSkill: <path>\nUser: <args>".
_OLD_SKILL = re.compile(r"\n\n---\n\nSkill: ([^\n]+?)(?:\nUser: (.*))?\Z", re.S)
_USER_ARGS = "\nUser: "
# Synthetic results omp writes for calls an interrupt cut off.
_INTERRUPTED_SOURCES = frozenset({"assistant_stop_aborted", "interrupt_skipped"})
#: The entry types that can yield something.
_TRANSLATED = frozenset({"message", "custom_message", "compaction", "session_init"})


def _num(value: Any) -> int:
    # Token counts: anything but a finite, non-negative number counts as 0.
    if type(value) is int:
        return value if value >= 0 else 0
    if isinstance(value, float) and 0 <= value < 1e18:
        return int(value)
    return 0


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or its text blocks joined by newlines."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [
        b["text"]
        for b in content
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    return parts[0] if len(parts) == 1 else "\n".join(parts)


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    i, o = _num(raw.get("input")), _num(raw.get("output"))
    cr, cw = _num(raw.get("cacheRead")), _num(raw.get("cacheWrite"))
    total = raw.get("totalTokens")
    # Old files lack totalTokens; omp's own loader repairs it as the sum.
    tot = _num(total) if total is not None else i + o + cr + cw
    cost_raw = raw.get("cost")
    cost: float | None = None
    if isinstance(cost_raw, dict):
        c = cost_raw.get("total")
        if isinstance(c, (int, float)) and not isinstance(c, bool):
            cost = float(c)
    return Usage(input=i, output=o, cache_read=cr, cache_write=cw, total=tot, cost=cost)


def _assistant(m: dict[str, Any], t: int | None) -> AssistantMessage:
    model_id = m.get("model")
    provider = m.get("provider")
    model = (
        ModelRef(provider if isinstance(provider, str) else "", model_id)
        if isinstance(model_id, str) and model_id
        else None
    )
    content = m.get("content")
    texts: list[str] = []
    calls: list[ToolCall] = []
    if isinstance(content, list):
        for b in content:
            if not isinstance(b, dict):
                continue
            kind = b.get("type")
            if kind == "text":
                text = b.get("text")
                if isinstance(text, str):
                    texts.append(text)
            elif kind == "toolCall":
                cid, name = b.get("id"), b.get("name")
                if isinstance(cid, str) and isinstance(name, str):
                    args = b.get("arguments")
                    calls.append(ToolCall(cid, name, args if args is not None else {}))
    elif isinstance(content, str):
        texts.append(content)
    stop = m.get("stopReason")
    stop_reason = stop if isinstance(stop, str) else None
    return AssistantMessage(
        "",
        t,
        model=model,
        usage=_usage(m.get("usage")),
        stop_reason=stop_reason,
        aborted=stop_reason == "aborted",
        text="\n".join(texts),
        tool_calls=tuple(calls),
    )


def _error_class(m: dict[str, Any], text: str) -> str | None:
    details = m.get("details")
    if isinstance(details, dict) and details.get("__synthetic") is True:
        return "interrupted" if details.get("source") in _INTERRUPTED_SOURCES else None
    if m.get("toolName") == "bash":
        fate = _BASH_FATE.search(text[-256:])
        if fate is not None:
            if fate.group(1) is not None:
                return "exit_nonzero"
            return "interrupted" if fate.group(2) else "timeout"
    return None


def _tool_result(m: dict[str, Any], t: int | None) -> ToolResult | None:
    call_id = m.get("toolCallId")
    if not isinstance(call_id, str):
        return None
    text = text_of(m.get("content"))
    flag = m.get("isError")
    is_error = flag if isinstance(flag, bool) else None
    tool = m.get("toolName")
    return ToolResult(
        "",
        t,
        call_id=call_id,
        output_bytes=utf8_len(text),
        output_head=text[:OUTPUT_HEAD_CHARS],
        is_error=is_error,
        error_class=_error_class(m, text) if is_error else None,
        tool=tool if isinstance(tool, str) else None,
    )


def _skill_name(path: str) -> str:
    parts = [p for p in re.split(r"[\\/]", path.strip()) if p]
    if not parts:
        return ""
    if parts[-1].lower() == "skill.md" and len(parts) > 1:
        return parts[-2]
    return parts[-1].rsplit(".", 1)[0] if parts[-1].lower().endswith(".md") else parts[-1]


def _user(m: dict[str, Any], t: int | None) -> UserMessage | None:
    if m.get("attribution") == "agent" or m.get("synthetic") is True:
        return None
    text = text_of(m.get("content"))
    if "\nSkill: " in text:
        old = _OLD_SKILL.search(text)
        if old is not None:
            name = _skill_name(old.group(1))
            return UserMessage("", t, text=old.group(2) or "", skills=(name,) if name else ())
    return UserMessage("", t, text=text)


def _skill_prompt(entry: dict[str, Any], t: int | None) -> UserMessage | SkillInvoked | None:
    details = entry.get("details")
    details = details if isinstance(details, dict) else {}
    name = details.get("name")
    name = name if isinstance(name, str) and name else None
    if entry.get("attribution") == "agent":
        return SkillInvoked("", t, name) if name else None
    args = details.get("args")
    if not isinstance(args, str):
        # The rendered prompt ends with "User: <args>" when the user gave any.
        content = text_of(entry.get("content"))
        at = content.rfind(_USER_ARGS)
        args = content[at + len(_USER_ARGS) :] if at >= 0 else ""
    return UserMessage("", t, text=args, skills=(name,) if name else ())


def _parent_session_id(parent: Path | None) -> str | None:
    """The session id in the parent file's header (read from its first lines only)."""
    if parent is None:
        return None
    try:
        src = Source("omp", parent, compression="gz" if parent.name.endswith(".gz") else "")
        with open_source(src) as f:
            for _ in range(2):
                line = f.readline(64 * 1024)
                try:
                    value = loads(line.strip())
                except ValueError:
                    return None
                if isinstance(value, dict) and is_header(value):
                    sid: str = value["id"]
                    return sid
    except OSError:
        return None
    return None


def _runtime_version(value: dict[str, Any]) -> str | None:
    runtime = value.get("runtime")
    if isinstance(runtime, dict):
        v = runtime.get("version")
        if isinstance(v, str) and v:
            return v
    return None


def _session(source: Source, header: dict[str, Any], version: str | None) -> Session:
    cwd = header.get("cwd")
    sub = source.agent_kind == "sub"
    return Session(
        "",
        iso_ms(header.get("timestamp")),
        session_id=header["id"],
        cwd=cwd if isinstance(cwd, str) else "",
        agent_kind=source.agent_kind,
        agent_name=stem(source.path) if sub else None,
        harness_version=version,
        parent_session_id=_parent_session_id(source.parent) if sub else None,
    )


def translate(source: Source, records: Iterator[RawRecord], state: dict[str, Any]) -> Iterator[Neutral]:
    """Yield the neutral records of one omp session file's records (see the module doc)."""
    resuming = "sid" in state
    for rec in records:
        v = rec.value
        if not isinstance(v, dict):
            continue
        typ = v.get("type")
        if "sid" not in state:
            # Nothing before the header counts (the title slot, stray lines).
            if is_header(v):
                hv = _runtime_version(v)
                state.update(sid=v["id"], v=format_version(v), leaf=None, hv=hv is not None)
                yield _session(source, v, hv)
            continue
        if typ == "session":
            if resuming:
                raise RestartImport("omp session file was rewritten (a header after the resume point)")
            continue
        eid = v.get("id")
        if state["v"] >= 2:
            if not isinstance(eid, str):
                continue  # not a tree node: omp cannot place it on any branch
            if resuming and v.get("parentId") != state["leaf"]:
                raise RestartImport("omp session switched branch: the new entry does not extend the leaf")
            state["leaf"] = eid
        elif resuming and isinstance(eid, str):
            raise RestartImport("omp v1 session gained tree ids: the file was migrated")
        if not state["hv"]:
            hv = _runtime_version(v)
            if hv is not None:
                state["hv"] = True
                # The core takes a later version until session_start is written.
                yield Session("", None, session_id=state["sid"], agent_kind=source.agent_kind, harness_version=hv)
        if type(typ) is not str or typ not in _TRANSLATED:
            continue  # settings, labels, custom entries, unknown types: tree nodes only
        t = iso_ms(v.get("timestamp"))
        if typ == "message":
            m = v.get("message")
            if not isinstance(m, dict):
                continue
            if t is None:
                mt = m.get("timestamp")
                t = mt if type(mt) is int else None
            role = m.get("role")
            if role == "assistant":
                yield _assistant(m, t)
            elif role == "toolResult":
                result = _tool_result(m, t)
                if result is not None:
                    yield result
            elif role == "user":
                user = _user(m, t)
                if user is not None:
                    yield user
            elif role == "bashExecution":
                command = m.get("command")
                if isinstance(command, str):
                    yield UserMessage("", t, text="!" + command)
            elif role == "pythonExecution":
                code = m.get("code")
                if isinstance(code, str):
                    yield UserMessage("", t, text="%" + code)
        elif typ == "custom_message":
            if v.get("customType") == "skill-prompt":
                out = _skill_prompt(v, t)
                if out is not None:
                    yield out
        elif typ == "compaction":
            method = v.get("method")
            yield Compaction("", t, trigger=method if isinstance(method, str) else "")
        elif typ == "session_init":
            prompt = v.get("systemPrompt")
            if isinstance(prompt, list):
                prompt = "\n".join(p for p in prompt if isinstance(p, str))
            if isinstance(prompt, str) and prompt:
                yield Instructions("", t, text=prompt)
