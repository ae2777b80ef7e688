"""Payloads of rematch's opencode plugin in, the core's neutral records out (live capture).

The plugin (``plugin/rematch.ts``) hands opencode's own objects over as they are; each is read
by the import's functions (:mod:`.translate`), so live and import agree by construction. Every
payload names its session (``session_id``, and ``session``: opencode's session info), whose
stream is the session id, as a database import names it:

* every payload: the :class:`~rematch_trace.host.vocab.Session` of its ``session`` info (a
  subagent's names its parent, from ``parentID``);
* ``UserMessage``: the prompt (``message``, ``parts``), as the import reads a user message;
* ``PreToolUse``: the call before it runs (``tool_use_id`` is opencode's ``callID``, the import's
  call id); the service judges it;
* ``AssistantMessage``: a finished assistant message (``message``, ``parts``): one model message
  per step and its calls' results, as the import reads it, each call also restated (a fallback
  :class:`~rematch_trace.host.vocab.ToolStarted`: a call is recorded at its ``PreToolUse``);
* ``Stop``: the run's end (opencode's session went idle); ``SessionEnd``: the session's end.

Nothing here keeps the payload.
"""

from __future__ import annotations

from typing import Any

from rematch_trace.host import vocab
from rematch_trace.host.text import clean

from .translate import message_records, session_record


def _str(event: dict[str, Any], key: str) -> str:
    value = event.get(key)
    return clean(value) if type(value) is str else ""


def _message(event: dict[str, Any], sid: str, role: str) -> tuple[dict[str, Any], list[Any]] | None:
    msg, parts = event.get("message"), event.get("parts")
    if type(msg) is not dict or type(parts) is not list or msg.get("role") != role:
        return None
    return {**msg, "sessionID": sid}, [p for p in parts if type(p) is dict]


def records(event: dict[str, Any], t: int) -> list[vocab.Neutral]:
    """The neutral records of one payload of rematch's opencode plugin (see the module docstring)."""
    sid = _str(event, "session_id")
    if not sid:
        return []
    info = event.get("session")
    doc = {**(info if type(info) is dict else {}), "id": sid}
    if type(doc.get("directory")) is not str:
        doc["directory"] = _str(event, "cwd")
    session = session_record(sid, doc)
    out: list[vocab.Neutral] = [session]
    name = event.get("hook_event_name")
    if name == "UserMessage":
        found = _message(event, sid, "user")
        return [*out, *message_records(sid, *found)] if found is not None else out
    if name == "PreToolUse":
        call_id, tool = _str(event, "tool_use_id"), _str(event, "tool_name")
        if not call_id or not tool:
            return out
        return [*out, vocab.ToolStarted(sid, t, vocab.ToolCall(call_id, tool, event.get("tool_input")))]
    if name == "AssistantMessage":
        found = _message(event, sid, "assistant")
        if found is None:
            return out
        for rec in message_records(sid, *found):
            out.append(rec)
            if isinstance(rec, vocab.AssistantMessage):
                out.extend(vocab.ToolStarted(sid, rec.t, c, fallback=True) for c in rec.tool_calls)
        return out
    if name == "Stop":
        return [*out, vocab.RunEnd(sid, t, "stop")]
    if name == "SessionEnd":
        return [*out, vocab.SessionEnded(sid, t, _str(event, "reason"))]
    return out


def denial(verdict: dict[str, Any]) -> bytes:
    """The deny line the plugin reads from the hook client (``{"decision": "deny", "reason": ...}``);
    never with the call's input."""
    from rematch_trace.live.rematch_hook import deny_output

    return deny_output(verdict, "opencode", "PreToolUse")
