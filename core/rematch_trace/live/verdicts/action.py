"""A live tool call as the policy sees it: the normalized event v1 the import would write.

The ``pre_tool_use`` request's ``host_payload`` is the harness's own hook
input. Its call is read from these keys (Claude Code's ``PreToolUse`` input has
them as they are; another adapter renames its own to them): ``session_id``,
``cwd``, ``tool_name``, ``tool_input`` and ``tool_use_id`` (required but for the events of
:data:`UNNAMED_CALL_EVENTS`),
``agent_id`` (a subagent's id, optional). Every other key is ignored.

The event is built by the same :class:`~rematch_trace.security.events.EventSink`
the import uses, so action type, risk features, redacted summary and the
nonce-less fingerprint are exactly what the event stream holds for the same
call. The live binding adds the invocation nonce to the fingerprint
(:func:`~rematch_trace.security.fingerprint.action_fingerprint`). The original
input is read here and not kept: a :class:`LiveAction` holds the event (redacted)
and the paths the call names, nothing else of the input.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs

from rematch_trace.errors import NonExactNumber
from rematch_trace.host import vocab
from rematch_trace.host.facade import Host
from rematch_trace.host.source import Location, Source
from rematch_trace.live.ipc.codec import DecodeError
from rematch_trace.live.ipc.messages import Request
from rematch_trace.security.events import EventSink
from rematch_trace.security.fingerprint import action_fingerprint
from rematch_trace.security.redact import Redactor, default_redactor
from rematch_trace.security.risk import file_paths

_LIVE_PATH = Path("<live>")
#: The judged events whose payload names no call id (Codex's ``PermissionRequest``, Gemini CLI's
#: ``BeforeTool``).
UNNAMED_CALL_EVENTS = ("PermissionRequest", "BeforeTool")


@attrs.frozen
class LiveAction:
    """One live call: its normalized ``pre_tool_use`` event and what the policy reads beside it.

    :param event: the normalized event v1 (redacted; no original input).
    :param binding: the fingerprint with the invocation nonce (``None`` when the input has none).
    :param nonce: the request's invocation nonce.
    :param paths: the file paths the call names, absolute (relative ones joined to ``cwd``), normalized.
    :param root: the repository top, or the working directory outside a repository.
    """

    event: dict[str, Any]
    binding: str | None
    nonce: str
    paths: tuple[str, ...]
    root: str

    @property
    def action_type(self) -> str:
        """The event's action type."""
        return str(self.event["action_type"])

    @property
    def risk_features(self) -> list[str]:
        """The event's risk features, most severe first."""
        return list(self.event["risk_features"])


def _field(payload: dict[str, Any], key: str, *, required: bool = True) -> str | None:
    v = payload.get(key)
    if v is None and not required:
        return None
    if type(v) is not str or not v or len(v) > 4096:
        raise DecodeError("invalid_value", f"host_payload.{key}: must be a non-empty string")
    return v


#: (plugin manager, harness) -> the plugin that owns the harness ("" when none does).
_OWNERS: dict[tuple[int, str], str] = {}


def harness_plugin(host: Host, harness: str) -> str:
    """The plugin of ``harness``: the one whose ``default_locations`` name it (asked once per harness).

    A live call has no file for ``detect_source`` to claim, and the per-source
    hooks (``classify_action``) go only to a source's own plugin: the harness
    a plugin declares its folders for is the one it owns.
    """
    key = (id(host.pm), harness)
    owner = _OWNERS.get(key)
    if owner is not None:
        return owner
    owner = ""
    plugins = host.pm.get_plugins()
    for impl in host.pm.hook.default_locations.get_hookimpls():
        if impl.wrapper or impl.hookwrapper:
            continue
        others = [p for p in plugins if p is not impl.plugin]
        try:
            answers = host.pm.subset_hook_caller("default_locations", others)()
            found = [loc for answer in answers for loc in (answer or [])]
        except Exception:
            continue  # a plugin that cannot say its folders owns nothing here
        if any(isinstance(loc, Location) and loc.harness == harness for loc in found):
            owner = impl.plugin_name
            break
    _OWNERS[key] = owner
    return owner


def _captured_call(host: Host, adapter: str, payload: dict[str, Any],
                   t: int) -> tuple[vocab.Session, str | None, vocab.ToolCall] | None:
    """The session, turn and call live capture records for ``payload``; ``None`` when no plugin gives them."""
    try:
        event = payload if payload.get("hook_event_name") == "PermissionRequest" else dict(
            payload, hook_event_name="PreToolUse")
        records = host.live(adapter, event, t)
    except Exception:  # a plugin that fails here leaves the keys as they are
        return None
    asking = payload.get("hook_event_name") == "PermissionRequest"
    # A permission request restates a call already started (a fallback ToolStarted): that call.
    started = next((r for r in records if isinstance(r, vocab.ToolStarted) and (asking or not r.fallback)), None)
    if started is None:
        return None
    stream = started.stream
    session = next((r for r in records if isinstance(r, vocab.Session) and r.stream == stream), None)
    if session is None:
        return None
    turn = next((r.turn_id for r in records if isinstance(r, vocab.TurnStarted) and r.stream == stream), None)
    return session, turn, started.call


def build_action(host: Host, request: Request, redactor: Redactor | None = None) -> LiveAction:
    """The :class:`LiveAction` of a ``pre_tool_use`` request.

    :raises DecodeError: ``invalid_value`` when the payload lacks the call's keys.
    """
    p = request["host_payload"]
    session_id = _field(p, "session_id")
    cwd = _field(p, "cwd")
    tool = _field(p, "tool_name")
    # A permission request names no call (Codex's): the plugin's records give the call it is for;
    # when none does (a command the model did not call, e.g. one of a script's own), it is judged
    # as a call of its own, named for the invocation (nothing of it reaches the trace).
    asking = p.get("hook_event_name") == "PermissionRequest"
    # Gemini CLI's BeforeTool names no call either (its id is in the log only once the call is
    # done): the call is named for the invocation too, and its records come from the log.
    unnamed = p.get("hook_event_name") in UNNAMED_CALL_EVENTS
    call_id = _field(p, "tool_use_id", required=not unnamed) or (
        f"{'permission' if asking else 'call'}-{request['invocation_nonce'][:16]}")
    sub = _field(p, "agent_id", required=False)
    assert session_id is not None and cwd is not None and tool is not None and call_id is not None
    if "tool_input" not in p:
        raise DecodeError("invalid_value", "host_payload.tool_input: required")
    tool_input = p["tool_input"]
    adapter = request["adapter"]
    t = request["received_at_ms"]
    source = Source(harness=adapter, path=_LIVE_PATH, agent_kind="sub" if sub else "main",
                    plugin=harness_plugin(host, adapter))
    # The call as live capture records it (issue 28): the harness plugin's own records of this
    # payload give its session (a subagent's is ``<session>.agent-<id>``, as on import), its
    # turn (the prompt id) and its cleaned input, so the event and the approval carry the
    # fingerprint the event stream and the import give the same call.
    captured = _captured_call(host, adapter, p, t)
    if captured is not None:
        session, turn, call = captured
        source = attrs.evolve(source, agent_kind=session.agent_kind)
    else:  # no plugin translates this harness: the keys as they are, no turn
        session = vocab.Session(
            stream="live", t=t, session_id=sub or session_id, cwd=cwd,
            agent_kind="sub" if sub else "main", parent_session_id=session_id if sub else None,
        )
        turn, call = None, vocab.ToolCall(call_id, tool, tool_input)
    sink = EventSink(source, session, host=host, redactor=redactor or default_redactor())
    sink.feed(session)
    if turn is not None:
        sink.feed(vocab.TurnStarted(session.stream, t, turn))
    events = sink.feed(vocab.AssistantMessage(stream=session.stream, t=t, tool_calls=(call,)))
    event = events[-1]
    try:
        # The event's own fingerprint with the invocation nonce added: the same members, from the sink.
        binding: str | None = action_fingerprint(
            adapter, session.session_id, sink.turn, call.id, call.name, sink.cwd, call.input, sink.agent_sub_id,
            nonce=request["invocation_nonce"],
        )
    except NonExactNumber:
        binding = None
    root = event["repo_root"] or cwd
    found = [os.path.normpath(os.path.join(cwd, x)) for x in file_paths(tool_input) if x and "\x00" not in x]
    return LiveAction(event=event, binding=binding, nonce=request["invocation_nonce"], paths=tuple(found),
                      root=os.path.normpath(root))


def outside(path: str, root: str) -> bool:
    """Whether normalized absolute ``path`` lies outside folder ``root`` (no file system access)."""
    return not (path == root or path.startswith(root.rstrip("/") + "/"))


__all__ = ["LiveAction", "build_action", "harness_plugin", "outside"]
