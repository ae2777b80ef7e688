"""opencode records (see :mod:`.store`) to the core's neutral vocabulary.

Per session: a :class:`Session` (a subagent's names its parent, from ``parentID``), then per
message: a user message's typed text parts as a :class:`UserMessage` (after a
:class:`TurnStarted` with the message id); an assistant message as one
:class:`AssistantMessage` per step (``step-start`` ... ``step-finish``, usage from the step's
``tokens``; a message without steps takes the message's ``tokens``), each followed by the
:class:`ToolResult` of its finished tool parts. ``compaction`` parts are :class:`Compaction`.

State (ids only, no text): per session, whether it is open and the id of the last message
given. A message id at or before it is skipped (the database is read whole on every change;
a tree re-reads one message), and a session's last message is held back while opencode is
still writing it (an assistant message not ``completed`` and without an error, a user message
without parts): the next read gives it again, finished.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rematch_trace.host import vocab
from rematch_trace.host.source import RawRecord, Source
from rematch_trace.host.text import utf8_len

from . import where


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _ms(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (fields are untrusted)."""
    return value if isinstance(value, dict) else {}


def _time(doc: dict[str, Any], key: str = "created") -> int | None:
    t = doc.get("time")
    return _ms(t.get(key)) if isinstance(t, dict) else None


def usage_of(tokens: Any, cost: Any) -> vocab.Usage | None:
    """A usage from opencode's ``tokens`` (``input``, ``output``, ``reasoning``, ``cache.read/write``)."""
    if not isinstance(tokens, dict):
        return None
    cache = _obj(tokens.get("cache"))
    inp, out = _int(tokens.get("input")), _int(tokens.get("output")) + _int(tokens.get("reasoning"))
    read, write = _int(cache.get("read")), _int(cache.get("write"))
    total = _int(tokens.get("total")) or inp + out + read + write
    price = float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None
    return vocab.Usage(input=inp, output=out, cache_read=read, cache_write=write, total=total, cost=price)


def session_record(stream: str, doc: dict[str, Any]) -> vocab.Session:
    """The session record of a ``session`` document."""
    parent = doc.get("parentID") if isinstance(doc.get("parentID"), str) else None
    title = _str(doc.get("title"))
    # A subagent's session is titled "<description> (@<agent> subagent)".
    name = None
    if parent is not None and title.endswith(" subagent)") and "(@" in title:
        name = title[title.rindex("(@") + 2:-len(" subagent)")] or None
    return vocab.Session(stream, _time(doc), _str(doc.get("id")), cwd=_str(doc.get("directory")),
                         agent_kind="sub" if parent else "main", agent_name=name,
                         harness_version=doc.get("version") if isinstance(doc.get("version"), str) else None,
                         parent_session_id=parent)


def unfinished(msg: dict[str, Any], parts: list[Any]) -> bool:
    """Whether opencode is still writing the message (so it is held back when it is a session's last)."""
    if msg.get("role") == "user":
        return not parts
    if msg.get("role") == "assistant":
        return _time(msg, "completed") is None and not msg.get("error")
    return False


def tool_outcome(part: dict[str, Any]) -> tuple[str, bool, str | None, int | None] | None:
    """A finished tool part's (``completed`` or ``error``) whole output or error text, whether it failed,
    its error class and its end time; ``None`` while it has not finished."""
    st = _obj(part.get("state"))
    status = st.get("status")
    if status not in ("completed", "error"):
        return None
    end = _ms(_obj(st.get("time")).get("end"))
    if status == "completed":
        output = _str(st.get("output"))
        code = _obj(st.get("metadata")).get("exit")
        failed = isinstance(code, int) and not isinstance(code, bool) and code != 0
        return output, failed, "exit_nonzero" if failed else None, end
    error = _str(st.get("error"))
    rejected = "rejected" in error.lower() and "permission" in error.lower()
    return error, True, "rejected" if rejected else None, end


def _result(stream: str, part: dict[str, Any]) -> vocab.ToolResult | None:
    """The result of a finished tool part, else ``None``."""
    done = tool_outcome(part)
    if done is None:
        return None
    text, failed, error_class, end = done
    return vocab.ToolResult(stream, end, _str(part.get("callID")), utf8_len(text), text[:vocab.OUTPUT_HEAD_CHARS],
                            is_error=failed, error_class=error_class, tool=_str(part.get("tool")) or None)


def said(part: dict[str, Any]) -> bool:
    """Whether an assistant message's part is text the model wrote (not one opencode injected)."""
    return part.get("type") == "text" and not part.get("synthetic")


def assistant_records(stream: str, msg: dict[str, Any], parts: list[Any]) -> Iterator[vocab.Neutral]:
    """One assistant message per step, each followed by its tool results."""
    model = None
    if isinstance(msg.get("modelID"), str):
        model = vocab.ModelRef(_str(msg.get("providerID")), msg["modelID"])
    error = msg.get("error") if isinstance(msg.get("error"), dict) else None
    aborted = error is not None and error.get("name") == "MessageAbortedError"
    steps: list[list[dict[str, Any]]] = [[]]
    for part in parts:
        if not isinstance(part, dict):
            continue
        steps[-1].append(part)
        if part.get("type") == "step-finish":
            steps.append([])
    if not steps[-1] and len(steps) > 1:
        steps.pop()
    t0 = _time(msg)
    for i, step in enumerate(steps):
        last = i == len(steps) - 1
        finish = next((p for p in step if p.get("type") == "step-finish"), None)
        if finish is not None and len(steps) > 1:
            usage = usage_of(finish.get("tokens"), finish.get("cost"))
            stop = _str(finish.get("reason")) or None
        else:
            usage = usage_of(msg.get("tokens"), msg.get("cost"))
            stop = _str(msg.get("finish")) or (_str(finish.get("reason")) if finish else "") or None
        if error is not None and last and not aborted:
            stop = stop or "error"
        text = "".join(_str(p.get("text")) for p in step if said(p))
        tools = [p for p in step if p.get("type") == "tool" and isinstance(p.get("callID"), str)]
        calls = tuple(vocab.ToolCall(p["callID"], _str(p.get("tool")), _obj(p.get("state")).get("input"))
                      for p in tools)
        for c in step:
            if c.get("type") == "compaction":
                yield vocab.Compaction(stream, t0, trigger="auto" if c.get("auto") else "manual")
        yield vocab.AssistantMessage(stream, t0, model=model, usage=usage, stop_reason=stop,
                                     aborted=aborted and last, text=text, tool_calls=calls)
        for p in tools:
            res = _result(stream, p)
            if res is not None:
                yield res


def user_text(parts: list[Any]) -> str:
    """A user message's typed text: its text parts that opencode did not inject, joined."""
    return "\n".join(_str(p.get("text")) for p in parts if isinstance(p, dict) and p.get("type") == "text"
                     and not p.get("synthetic") and not p.get("ignored"))


def message_records(stream: str, msg: dict[str, Any], parts: list[Any]) -> Iterator[vocab.Neutral]:
    """The neutral records of one message."""
    role = msg.get("role")
    t = _time(msg)
    if role == "user":
        yield vocab.TurnStarted(stream, t, _str(msg.get("id")))
        for p in parts:
            if isinstance(p, dict) and p.get("type") == "compaction":
                yield vocab.Compaction(stream, t, trigger="auto" if p.get("auto") else "manual")
        text = user_text(parts)
        if text:
            yield vocab.UserMessage(stream, t, text)
    elif role == "assistant":
        yield from assistant_records(stream, msg, parts)


def entries(records: Iterator[RawRecord]) -> Iterator[tuple[str | None, dict[str, Any] | None, list[Any] | None]]:
    """:mod:`.store`'s records as ``(session id, document, None)`` for a session record (``(None, None,
    None)`` for one that names no id) and ``(session id, message, parts)`` for a message: its own
    ``sessionID``, else the session the records last opened. Anything else is passed over."""
    current = ""
    for rec in records:
        value = rec.value
        kind = value.get("kind") if isinstance(value, dict) else None
        if kind == "session":
            doc = value.get("session")
            if isinstance(doc, dict) and isinstance(doc.get("id"), str):
                current = doc["id"]
                yield current, doc, None
            else:
                yield None, None, None
        elif kind == "message":
            msg, parts = value.get("message"), value.get("parts")
            if isinstance(msg, dict) and isinstance(parts, list):
                yield msg["sessionID"] if isinstance(msg.get("sessionID"), str) else current, msg, parts


def translate(source: Source, records: Iterator[RawRecord], state: dict[str, Any]) -> Iterator[vocab.Neutral]:
    """Neutral records of a database (one stream per session, its id) or of one tree session (stream ``""``)."""
    database = where.is_database(source.path)
    sessions: dict[str, dict[str, Any]] = state.setdefault("sessions", {})
    # A session's last message, held back while unfinished: (session, message, parts).
    held: tuple[str, dict[str, Any], list[Any]] | None = None
    for sid, msg, parts in entries(records):
        if parts is None:  # a session record
            held = None  # the last message of the session before, unfinished: it waits for the next read
            if sid is not None and msg is not None and sid not in sessions:
                sessions[sid] = {"last": ""}
                yield session_record(sid if database else "", msg)
            continue
        if sid is None or msg is None or sid not in sessions or _str(msg.get("id")) <= sessions[sid]["last"]:
            continue
        if held is not None:
            yield from _give(sessions, database, *held)
            held = None
        if unfinished(msg, parts):
            held = (sid, msg, parts)
            continue
        yield from _give(sessions, database, sid, msg, parts)
    # A session's last message, still unfinished, waits for the next read (opencode is writing it).


def _give(sessions: dict[str, dict[str, Any]], database: bool, sid: str, msg: dict[str, Any],
          parts: list[Any]) -> Iterator[vocab.Neutral]:
    sessions[sid]["last"] = _str(msg.get("id"))
    yield from message_records(sid if database else "", msg, parts)
