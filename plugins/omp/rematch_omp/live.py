"""pi and omp extension events in, the core's neutral records out (live capture).

rematch's extension (``extension/rematch.ts``) hands each event to ``rematch serve`` as a
``hook_event`` payload: ``hook_event_name`` (pi's event type), ``session_id``, ``cwd``,
``session_file``, ``idle``, ``model``, ``harness_version`` (the harness's context), and the
event's own fields under ``event``. A call before it runs comes as ``PreToolUse`` with the keys IPC v2 reads for a verdict
(``tool_name``, ``tool_use_id``, ``tool_input``). What each becomes, after the stream's
:class:`~rematch_trace.host.vocab.Session`:

* ``input`` -> a :class:`~rematch_trace.host.vocab.UserMessage` with its ``source``
  (``interactive``, ``rpc``, ``extension``: the seed's live-only ``input.source``);
* ``PreToolUse`` -> a :class:`~rematch_trace.host.vocab.ToolStarted`;
* ``message_end`` of an assistant message -> the :class:`~rematch_trace.host.vocab.AssistantMessage`
  the import reads from the same message in the session file, of a tool result -> its
  :class:`~rematch_trace.host.vocab.ToolResult` (the importer's own functions: live and import
  agree by construction);
* ``message_end`` of a user message (sent only when no ``input`` came for it: omp's print mode
  emits none) -> the :class:`~rematch_trace.host.vocab.UserMessage` the import reads from it (no
  ``source``: the harness named none);
* ``agent_end`` -> a :class:`~rematch_trace.host.vocab.RunEnd` (``aborted`` when the run's last
  message stopped aborted, ``failure`` on an error stop, else ``stop``), not ``terminal`` when the
  harness said its loop goes on by itself (omp's ``will_continue``, pi's ``pending`` messages);
* ``retry_fallback_applied`` (omp only) -> a :class:`~rematch_trace.host.vocab.ModelSwitched` to the
  payload's ``model`` (read after the move), reason ``retry_fallback``;
* ``session_shutdown`` -> :class:`~rematch_trace.host.vocab.SessionEnded` with pi's reason, and the
  seed's 1 s for hashing ``files_changed``.

``session_start`` and ``agent_start`` open the stream only. Nothing here keeps the payload.
"""

from __future__ import annotations

from typing import Any

import orjson

from rematch_trace.host.text import clean
from rematch_trace.host.vocab import (
    ModelRef,
    ModelSwitched,
    Neutral,
    RunEnd,
    Session,
    SessionEnded,
    ToolCall,
    ToolStarted,
    UserMessage,
)

from .translate import _assistant, _tool_result, _user

#: The adapter name the extension sends in omp (in pi it sends ``pi``: ``rematch-pi`` translates those
#: events with this module's functions).
HARNESS = "omp"
#: What the extension's block reason starts with (as the hook client's deny reason does), so the
#: harness's report of the block is read as rematch's own deny (``session_writer._reports_our_deny``).
DENY_PREFIX = "rematch: "
#: How long hashing ``files_changed`` may take at a session's end: the seed's 1 s of the
#: extension's 2 s shutdown budget (the extension waits for the service within those 2 s).
HASH_BUDGET_S = 1.0
#: The longest block reason handed to the harness.
MAX_REASON_CHARS = 10_000


def _str(obj: dict[str, Any], key: str) -> str:
    value = obj.get(key)
    return clean(value) if type(value) is str else ""


def _model(value: Any) -> ModelRef | None:
    if type(value) is not dict:
        return None
    provider, ident = value.get("provider"), value.get("id")
    if type(provider) is str and type(ident) is str and ident:
        return ModelRef(clean(provider), clean(ident))
    return None


def records(event: dict[str, Any], t: int) -> list[Neutral]:
    """The neutral records of one extension payload (see the module docstring); ``[]`` for others."""
    sid = _str(event, "session_id")
    name = event.get("hook_event_name")
    if not sid or type(name) is not str:
        return []
    version = _str(event, "harness_version") or None
    session = Session("", t, sid, _str(event, "cwd"), "main", harness_version=version, model=_model(event.get("model")))
    out: list[Neutral] = [session]
    fields = event.get("event")
    fields = fields if type(fields) is dict else {}
    if name in ("session_start", "agent_start"):
        return out
    if name == "input":
        text = fields.get("text")
        if type(text) is not str:
            return []
        return [*out, UserMessage("", t, clean(text), source=_str(fields, "source"))]
    if name == "PreToolUse":
        call_id, tool = _str(event, "tool_use_id"), _str(event, "tool_name")
        if not call_id or not tool:
            return []
        return [*out, ToolStarted("", t, ToolCall(call_id, tool, event.get("tool_input")))]
    if name == "message_end":
        message = fields.get("message")
        if type(message) is not dict:
            return []
        role = message.get("role")
        if role == "assistant":
            return [*out, _assistant(message, t)]
        if role == "toolResult":
            result = _tool_result(message, t)
            return [*out, result] if result is not None else []
        if role == "user":
            typed = _user(message, t)
            return [*out, typed] if typed is not None else []
        return []
    if name == "agent_end":
        stop = fields.get("stop_reason")
        reason = "aborted" if stop == "aborted" else "failure" if stop == "error" else "stop"
        goes_on = fields.get("will_continue") is True or fields.get("pending") is True
        return [*out, RunEnd("", t, reason, terminal=not goes_on)]
    if name == "retry_fallback_applied":
        # omp moved to a fallback model (the payload's ``model``, read after the move): the seed's
        # retry-fallback ``model_change``.
        model = _model(event.get("model"))
        return [*out, ModelSwitched("", t, model, "retry_fallback")] if model is not None else []
    if name == "session_shutdown":
        return [*out, SessionEnded("", t, _str(fields, "reason"), hash_budget_s=HASH_BUDGET_S)]
    return []


def denial(verdict: dict[str, Any]) -> bytes:
    """The line ``rematch-hook omp`` prints for a deny: ``{"block": true, "reason": ...}`` (what the
    extension returns to pi's ``tool_call``), never with the call's input."""
    explanation = verdict.get("explanation")
    explanation = explanation if type(explanation) is str and explanation else "denied by rematch's policy"
    reason = verdict.get("reason")
    text = f"{DENY_PREFIX}{explanation} ({reason if type(reason) is str else 'deny'!s:.64}"
    incident = verdict.get("incident_id")
    text += f", incident {incident:.64})" if type(incident) is str and incident else ")"
    return orjson.dumps({"block": True, "reason": text[:MAX_REASON_CHARS]}) + b"\n"
