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
  :class:`~rematch_trace.host.vocab.CallBlocked`; a subagent one of them ran (``invoke_agent``, its
  ``agentId``) is its own session, read whole from its own log (``chats/<session>/<agent>.jsonl``)
  by the same translator, on the stream of its id, and ended;
* ``AfterAgent``: the run's last model message, then :class:`~rematch_trace.host.vocab.RunEnd`;
* ``PreCompress``: a :class:`~rematch_trace.host.vocab.Compaction`; ``SessionEnd``: the end.

Nothing here keeps the payload or the log's lines.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import attrs

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


def _source(path: object, kind: Literal["main", "sub"] = "main") -> Source | None:
    if type(path) is not str or not path.endswith((".jsonl", ".json")) or "\x00" in path:
        return None
    source = Source(HARNESS, Path(path), agent_kind=kind)
    return source if source.path.is_file() else None


def _translated(source: Source) -> tuple[list[Neutral], list[Any]]:
    """What the import's translator gives for ``source`` read whole now, and the records it read."""
    raw = [r.value for r in read.read(source, 0) if isinstance(r, RawRecord)]
    records = (RawRecord(i + 1, i, i + 1, v) for i, v in enumerate(raw))
    return list(translate.translate(source, records, {})), raw


def _log(event: dict[str, Any]) -> tuple[list[Neutral], list[Any]]:
    """The payload's log translated (``[]`` without one), and its records."""
    source = _source(event.get("transcript_path"))
    return _translated(source) if source is not None else ([], [])


def _agents(raw: list[Any], done: set[str]) -> dict[str, str]:
    """Call id -> the subagent it ran (``agentId``, Gemini CLI 0.61's ``invoke_agent``), for the calls ``done``."""
    out: dict[str, str] = {}
    for v in raw:
        calls = v.get("toolCalls") if isinstance(v, dict) else None
        for tc in calls if isinstance(calls, list) else ():
            if isinstance(tc, dict) and tc.get("id") in done and isinstance(tc.get("agentId"), str):
                out[tc["id"]] = tc["agentId"]
    return out


def _subagent(event: dict[str, Any], agent: str, t: int) -> list[Neutral]:
    """A finished subagent's session, read whole from its own log (``chats/<session>/<agent>.jsonl``, as the
    import finds it) on its own stream, and its end."""
    sid, log = event.get("session_id"), event.get("transcript_path")
    if (type(sid) is not str or type(log) is not str or not agent or any(c in agent for c in "/\\\x00")
            or agent in (".", "..") or any(c in sid for c in "/\\\x00") or sid in (".", "..")):
        return []
    source = _source(str(Path(log).parent / sid / f"{agent}.jsonl"), "sub")
    if source is None:
        return []
    records, _raw = _translated(source)
    out: list[Neutral] = [attrs.evolve(r, stream=agent) for r in _with_calls(records)]  # type: ignore[misc]
    return [*out, SessionEnded(agent, t, "subagent_stop")] if out else []


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


def _step(event: dict[str, Any], last: bool, t: int) -> list[Neutral]:
    """The step the log ends with: before a model request (``last`` false), the prompt just made or
    the model message whose calls are done and their results (and the session of a subagent one of
    them ran); at the run's end, its last message."""
    records, raw = _log(event)
    i = _last_said(records)
    if i < 0:
        return []
    tail = records[i:]
    said = tail[0]
    results = {r.call_id for r in tail if isinstance(r, ToolResult)}
    if isinstance(said, UserMessage):
        return [] if last else [said]
    if last:
        return [] if results else [said]
    if not results:
        return []
    subs = [rec for agent in sorted(set(_agents(raw, results).values())) for rec in _subagent(event, agent, t)]
    return [*_with_calls(tail), *subs]


def records(event: dict[str, Any], t: int) -> list[Neutral]:
    """The neutral records of one Gemini CLI hook payload (see the module docstring)."""
    sid = _str(event, "session_id")
    if not sid:
        return []
    out: list[Neutral] = [Session("", t, sid, _str(event, "cwd"), "main")]
    name = event.get("hook_event_name")
    if name == "BeforeModel":
        return [*out, *(r for r in _step(event, False, t) if not (isinstance(r, Session) and r.stream == ""))]
    if name == "AfterAgent":
        return [*out, *(r for r in _step(event, True, t) if not isinstance(r, Session)), RunEnd("", t, "stop")]
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
