"""Gemini CLI hook payloads in, the core's neutral records out (live capture).

Gemini CLI (0.61) runs command hooks from ``settings.json`` with a JSON payload on stdin:
``session_id``, ``transcript_path`` (the session's log), ``cwd``, ``hook_event_name``,
``timestamp``, and the event's own fields. Its ``BeforeTool`` names no call id, and a call
reaches the log only once it is done (with its id, arguments, status and result), before the
results go back to the model. So the hooks are where the log is read, and the log is read by
the import's own translator (:mod:`.translate`): live and import agree by construction.

* every payload: its :class:`~rematch_trace.host.vocab.Session` (the payload's id and ``cwd``);
* ``BeforeTool``: nothing here. The service judges the payload (a deny is Gemini CLI's
  ``decision: "deny"``; a hold waits for ``rematch approve``); the call is recorded when the log
  shows it;
* ``BeforeModel``: the step the log holds before this request. After a prompt, the prompt (a
  :class:`~rematch_trace.host.vocab.UserMessage`); after tool calls, the model message that made
  them (text, usage, model, calls), each call's :class:`~rematch_trace.host.vocab.ToolStarted`, and
  their results, a call Gemini CLI blocked with rematch's reason preceded by its
  :class:`~rematch_trace.host.vocab.CallBlocked`;
* ``AfterAgent``: the run's last model message, then :class:`~rematch_trace.host.vocab.RunEnd`;
* ``PreCompress``: a :class:`~rematch_trace.host.vocab.Compaction`; ``SessionEnd``: the end.

Nothing here keeps the payload or the log's lines.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rematch_trace.host.source import RawRecord, Source
from rematch_trace.host.text import clean
from rematch_trace.host.vocab import (
    AssistantMessage,
    CallBlocked,
    Compaction,
    Neutral,
    RunEnd,
    Session,
    SessionEnded,
    ToolResult,
    ToolStarted,
    UserMessage,
)

from . import read, translate

HARNESS = "gemini_cli"
#: The hook id of a call rematch's verdict denied (the core's ``VERDICT_HOOK_ID``).
VERDICT_HOOK = "rematch"
#: What Gemini CLI gives the model for a call a ``BeforeTool`` hook denied, rematch's reason after it
#: (``rematch: <explanation> (<reason>[, incident <id>])``, the hook client's deny).
_BLOCKED = re.compile(r"^Tool execution blocked: rematch: (?P<explanation>.*) \((?P<reason>[^,()]*)(?:, incident [^()]*)?\)$",
                      re.S)


def _str(event: dict[str, Any], key: str) -> str:
    value = event.get(key)
    return clean(value) if type(value) is str else ""


def _log(event: dict[str, Any]) -> list[Neutral]:
    """What the import's translator gives for the payload's log, read whole now (``[]`` without one)."""
    path = event.get("transcript_path")
    if type(path) is not str or not path.endswith((".jsonl", ".json")) or "\x00" in path:
        return []
    source = Source(HARNESS, Path(path))
    if not source.path.is_file():
        return []
    records = (r for r in read.read(source, 0) if isinstance(r, RawRecord))
    return list(translate.translate(source, records, {}))


def _last_said(records: list[Neutral]) -> int:
    """The index of the log's last prompt or model message, ``-1`` when none."""
    return next((i for i in range(len(records) - 1, -1, -1)
                 if isinstance(records[i], (UserMessage, AssistantMessage))), -1)


def _with_calls(records: list[Neutral]) -> list[Neutral]:
    """``records`` with each model message's calls started after it (live, a call is recorded by its
    :class:`ToolStarted`), and a :class:`CallBlocked` before each result that is rematch's deny as
    Gemini CLI gave it."""
    # (name, time) of each call: the block is timed when the call was made, before its result.
    calls = {c.id: (c.name, r.t) for r in records if isinstance(r, AssistantMessage) for c in r.tool_calls}
    out: list[Neutral] = []
    for r in records:
        if isinstance(r, ToolResult) and r.is_error:
            found = _BLOCKED.match(r.output_head)
            if found is not None:
                name, t = calls.get(r.call_id, (r.tool or "", r.t))
                out.append(CallBlocked(r.stream, t, r.call_id, name, VERDICT_HOOK,
                                       f"{found['reason']}: {found['explanation']}"))
        out.append(r)
        if isinstance(r, AssistantMessage):
            out.extend(ToolStarted(r.stream, r.t, c) for c in r.tool_calls)
    return out


def _step(event: dict[str, Any], last: bool) -> list[Neutral]:
    """The step the log ends with: before a model request (``last`` false), the prompt just made or
    the model message whose calls are done and their results; at the run's end, its last message."""
    records = _log(event)
    i = _last_said(records)
    if i < 0:
        return []
    tail = records[i:]
    said = tail[0]
    results = any(isinstance(r, ToolResult) for r in tail)
    if isinstance(said, UserMessage):
        return [] if last else [said]
    if last:
        return [] if results else [said]
    return _with_calls(tail) if results else []


def records(event: dict[str, Any], t: int) -> list[Neutral]:
    """The neutral records of one Gemini CLI hook payload (see the module docstring)."""
    sid = _str(event, "session_id")
    if not sid:
        return []
    out: list[Neutral] = [Session("", t, sid, _str(event, "cwd"), "main")]
    name = event.get("hook_event_name")
    if name == "BeforeModel":
        return [*out, *(r for r in _step(event, last=False) if not isinstance(r, Session))]
    if name == "AfterAgent":
        return [*out, *(r for r in _step(event, last=True) if not isinstance(r, Session)), RunEnd("", t, "stop")]
    if name == "PreCompress":
        return [*out, Compaction("", t, _str(event, "trigger"))]
    if name == "SessionEnd":
        return [*out, SessionEnded("", t, _str(event, "reason"))]
    return out


def denial(verdict: dict[str, Any]) -> bytes:
    """Gemini CLI's deny of a ``BeforeTool`` (``{"decision": "deny", "reason": ...}``), as the fast hook
    client prints it; never with the call's input."""
    from rematch_trace.live.rematch_hook import deny_output

    return deny_output(verdict, HARNESS, "BeforeTool")
