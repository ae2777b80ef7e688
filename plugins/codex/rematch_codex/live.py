"""Codex hook payloads in, the core's neutral records out (live capture).

Codex (0.124+) runs command hooks from ``hooks.json`` with a JSON payload on stdin:
``session_id``, ``transcript_path`` (the rollout), ``cwd``, ``hook_event_name``, ``model``,
``permission_mode``, and on turn-scoped events a ``turn_id``. What each becomes, stream ``""``;
a subagent's payloads (the parent's ``session_id``, the subagent's thread id as ``agent_id``, its
own rollout) are the subagent's session, stream ``agent_id``, as the import names it:

* every payload: its :class:`~rematch_trace.host.vocab.Session`, then a
  :class:`~rematch_trace.host.vocab.TurnStarted` for its ``turn_id`` (the import's turns are
  the rollout's ``turn_id`` too);
* ``UserPromptSubmit``: the prompt, an input (``source: "prompt"``); and the turn's permission
  mode as the import reads it (the turn_context's ``approval_policy/sandbox``);
* ``PreToolUse``: the call. Codex's payload normalises a shell call to ``tool_name: "Bash"``,
  ``tool_input.command``; the rollout, written before the hook runs, holds the call as the model
  made it (``exec_command`` and its ``cmd``), which is what the import reads and hashes: that is
  the call recorded, the payload's form only when the rollout does not show it;
* ``PostToolUse``: the result. Codex's ``tool_response`` is the command's output without its exit
  code; the rollout's ``item_completed`` of the call (written before the hook runs) carries it,
  and decides the error as the import's ``exec_command_end`` rule does;
* ``Stop``: one :class:`~rematch_trace.host.vocab.AssistantMessage` per model response of the
  turn (the rollout's ``token_usage_record`` lines, each with its usage; the model the turn's
  ``turn_context`` names), the last with ``last_assistant_message``, then
  :class:`~rematch_trace.host.vocab.RunEnd`;
* ``PermissionRequest`` (Codex about to ask for approval; no call id): the call it asks about,
  restated (a fallback :class:`~rematch_trace.host.vocab.ToolStarted`): the turn's newest rollout
  call whose command agrees, an open one first; the service judges it as a ``PreToolUse``;
* ``SubagentStart``: the subagent's session; ``SubagentStop``: as ``Stop``, then its end;
* ``PostCompact``: a :class:`~rematch_trace.host.vocab.Compaction`; ``SessionEnd``: the end.

Nothing here keeps the payload or the rollout's lines: records carry what the core digests.
"""

from __future__ import annotations

from typing import Any

from rematch_trace.host.text import clean, utf8_len
from rematch_trace.host.vocab import (
    OUTPUT_HEAD_CHARS,
    AssistantMessage,
    Compaction,
    ModelRef,
    Neutral,
    PermissionMode,
    RunEnd,
    Session,
    SessionEnded,
    ToolCall,
    ToolResult,
    ToolStarted,
    TurnStarted,
    UserMessage,
)

from . import results, rollout_tail, usage
from .translate import _call_input, permission_mode, subagent_of

#: ``input.source`` of a prompt the user submitted.
PROMPT_SOURCE = "prompt"
#: The provider named when the rollout names none (the import's default).
DEFAULT_PROVIDER = "openai"
#: How long a hook waits for Codex to write the lines it reads, and how often it looks. Codex
#: writes them before it runs the hook, through a writer of its own: usually there at once.
FLUSH_WAIT_S = 0.5
FLUSH_POLL_S = 0.01
#: The rollout items that are a call, and how the import names the tool of each (see translate.call).
_CALL_TYPES = ("function_call", "custom_tool_call", "local_shell_call")


def _str(event: dict[str, Any], key: str) -> str:
    value = event.get(key)
    return clean(value) if type(value) is str else ""


def _provider(meta: dict[str, Any]) -> str:
    provider = meta.get("model_provider")
    return clean(provider) if type(provider) is str and provider else DEFAULT_PROVIDER


def _agent(event: dict[str, Any]) -> str:
    """The subagent a payload is of (its thread id), ``""`` for the main thread's."""
    agent = _str(event, "agent_id")
    return agent if agent != _str(event, "session_id") else ""


def _rollout(event: dict[str, Any]) -> str:
    """The rollout of the payload's own thread: a subagent's ``SubagentStop`` names it
    ``agent_transcript_path`` (its ``transcript_path`` is the parent's); every other payload
    of a thread names its own ``transcript_path``."""
    return _str(event, "agent_transcript_path") or _str(event, "transcript_path")


def _session(event: dict[str, Any], t: int) -> Session | None:
    """The payload's session. A subagent's payloads carry the parent's ``session_id`` and the
    subagent's thread id as ``agent_id``: its session is the thread, as the import of its own
    rollout names it (kind ``sub``, the parent thread, the name its ``session_meta`` gives)."""
    sid = _str(event, "session_id")
    if not sid:
        return None
    model = _str(event, "model")
    agent = _agent(event)
    meta = rollout_tail.session_meta(_rollout(event))
    ref = ModelRef(_provider(meta), model) if model else None
    if not agent:
        return Session("", t, sid, _str(event, "cwd"), "main", None, None, None, ref)
    _, parent, name = subagent_of(meta) if meta.get("id") == agent else (True, None, None)
    parent = clean(parent) if type(parent) is str and parent else sid
    name = clean(name) if type(name) is str and name else None
    return Session(agent, t, agent, _str(event, "cwd"), "sub", name, None, parent, ref)


def _payload_call(event: dict[str, Any]) -> ToolCall | None:
    call_id = _str(event, "tool_use_id")
    name = _str(event, "tool_name")
    if not call_id or not name:
        return None
    return ToolCall(call_id, name, event.get("tool_input"))


def _item(line: dict[str, Any]) -> dict[str, Any]:
    payload = line.get("payload")
    return payload if type(payload) is dict else {}


def _is_call(line: dict[str, Any], call_id: str) -> bool:
    p = _item(line)
    return line.get("type") == "response_item" and p.get("type") in _CALL_TYPES and p.get("call_id") == call_id


def _call_lines(path: str, call_id: str) -> list[dict[str, Any]]:
    """The rollout's lines naming ``call_id``, back to the call itself (within the call window)."""
    return rollout_tail.lines_with(path, f'"{call_id}"', lambda x: _is_call(x, call_id), rollout_tail.CALL_SCAN_BYTES)


def _rollout_call(path: str, call_id: str) -> ToolCall | None:
    """The call ``call_id`` as the rollout holds it (the import's name and input), or ``None``.

    ``None`` too when the rollout holds more than one call line for the id: the rollout is the
    agent's to write (a forged line), and which is Codex's own cannot be told.
    """
    found: list[ToolCall] = []
    for line in _call_lines(path, call_id):
        if not _is_call(line, call_id):
            continue
        p = _item(line)
        typ, name = p.get("type"), p.get("name")
        if typ == "function_call":
            namespace = p.get("namespace")
            if type(namespace) is str and namespace and type(name) is str:
                name = namespace + name if namespace.endswith("_") else f"{namespace}.{name}"
        elif typ == "local_shell_call":
            name = "local_shell"
        if type(name) is not str or not name:
            name = "unknown"
        found.append(ToolCall(call_id, clean(name), _call_input(p)))
    return found[0] if len(found) == 1 else None


def _command(value: Any) -> str | None:
    """A shell call's command text: a string, or the script of an ``[shell, -lc, script]`` list."""
    if type(value) is str:
        return value
    if type(value) is list and value and all(type(x) is str for x in value):
        return str(value[-1]) if len(value) >= 3 and value[-2] in ("-c", "-lc") else " ".join(value)
    return None


def _names(name: str) -> tuple[str, ...]:
    """How a payload may name the rollout's tool ``name``: as it is, and for a namespaced one
    (``multi_agent_v1.spawn_agent``) bare (``spawn_agent``) or joined (``multi_agent_v1spawn_agent``):
    Codex 0.169 names ``spawn_agent`` bare and ``wait_agent`` joined."""
    namespace, dot, bare = name.rpartition(".")
    return (name, bare, namespace + bare) if dot else (name,)


def agrees(payload: ToolCall, rollout: ToolCall) -> bool:
    """Whether the rollout's call is the one the payload says will run.

    Codex normalises a shell call in the payload (``Bash``, ``tool_input.command``); the rollout
    holds the model's own (``exec_command`` and ``cmd``, ``shell``/``local_shell`` and a
    ``command`` list). Any other call must be the same input and name (a namespaced tool's may
    be named bare or joined, :func:`_names`).
    """
    if payload.input == rollout.input and payload.name in _names(rollout.name):
        return True
    if payload.name != "Bash" or type(payload.input) is not dict or type(rollout.input) is not dict:
        return False
    wanted = payload.input.get("command")
    given = rollout.input.get("cmd", rollout.input.get("command"))
    if type(given) is dict:  # local_shell's action: {"type": "exec", "command": [...]}
        given = given.get("command")
    return type(wanted) is str and _command(given) == wanted


def _call(event: dict[str, Any]) -> ToolCall | None:
    """The call: the rollout's form when it is the payload's call, else the payload's.

    The payload is what Codex runs and what the verdict must judge; the rollout is a file the
    agent can write. Its form (the import's name and input, so ``args_hash`` agrees) is taken
    only when it says the same call (:func:`agrees`).
    """
    payload = _payload_call(event)
    if payload is None:
        return None
    found = _rollout_call(_rollout(event), payload.id)
    return found if found is not None and agrees(payload, found) else payload


def _asked_call(event: dict[str, Any]) -> ToolCall | None:
    """The call a ``PermissionRequest`` asks about: the turn's newest call the payload's command
    agrees with (:func:`agrees`), one without an output yet first, as the rollout holds it; else ``None``.

    Codex names no call id in this payload; the call it escalates was written to the rollout
    before its ``PreToolUse`` ran.
    """
    path, turn_id = _rollout(event), _str(event, "turn_id")
    tool_input = event.get("tool_input")
    command = tool_input.get("command") if type(tool_input) is dict else None
    if not turn_id or type(command) is not str:
        return None
    asked = ToolCall("", "Bash", {"command": command})

    def read() -> ToolCall | None:
        calls: list[str] = []
        done: set[str] = set()
        for line in _turn_lines(path, turn_id, '"call_id"'):
            p = _item(line)
            call_id = p.get("call_id")
            if line.get("type") != "response_item" or type(call_id) is not str:
                continue
            if p.get("type") in _CALL_TYPES:
                calls.append(call_id)
            elif p.get("type") in ("function_call_output", "custom_tool_call_output"):
                done.add(call_id)
        # A call without its output first; else the newest (the payload is captured after the
        # verdict's reply, by which time Codex may have written a denied call's output).
        for call_id in [c for c in reversed(calls) if c not in done] + [c for c in reversed(calls) if c in done]:
            found = _rollout_call(path, call_id)
            if found is not None and agrees(asked, found):
                return found
        return None

    # Codex writes the call through its own writer thread: waited for briefly, as a result's line is.
    found: ToolCall | None = rollout_tail.wait_for(read, lambda x: x is not None, FLUSH_WAIT_S, FLUSH_POLL_S)
    return found


def _outcome(path: str, call_id: str) -> results.Outcome | None:
    """The call's outcome from its ``item_completed`` (a command's exit code), waited for briefly."""
    def read() -> dict[str, Any] | None:
        items = []
        for line in _call_lines(path, call_id):
            p = _item(line)
            item = p.get("item")
            if p.get("type") == "item_completed" and type(item) is dict and item.get("id") == call_id:
                items.append(item)
        # More than one (a line the agent wrote): none is trusted, the output's text decides.
        return items[0] if len(items) == 1 else None

    item = rollout_tail.wait_for(read, lambda x: x is not None, FLUSH_WAIT_S, FLUSH_POLL_S)
    if item is None:
        return None
    if item.get("type") == "CommandExecution":
        return results.structured("exec_command_end", item)
    return None


def _result(event: dict[str, Any], call: ToolCall, t: int, stream: str) -> ToolResult:
    text = results.output_text(event.get("tool_response"))
    found = _outcome(_rollout(event), call.id)
    err, cls = found if found is not None else results.classify_output(text, event.get("tool_response"))
    text = clean(text)
    return ToolResult(stream, t, call.id, utf8_len(text), text[:OUTPUT_HEAD_CHARS], err, cls, call.name)


def _turn_lines(path: str, turn_id: str, *more: str) -> list[dict[str, Any]]:
    """The lines naming ``turn_id`` (or any of ``more``) from the turn's first line on."""
    def first(line: dict[str, Any]) -> bool:
        return (line.get("type") == "turn_context" or _item(line).get("type") == "task_started") \
            and _item(line).get("turn_id") == turn_id

    found = rollout_tail.lines_with(path, (turn_id, *more), first)
    start = next((i for i, line in enumerate(found) if first(line)), 0)
    return found[start:]


def _mode(path: str, turn_id: str) -> str | None:
    for line in _turn_lines(path, turn_id):
        if line.get("type") == "turn_context" and _item(line).get("turn_id") == turn_id:
            return permission_mode(_item(line))
    return None


def _responses(path: str, turn_id: str, last_text: str) -> tuple[list[list[int]], str]:
    """The turn's responses' usage vectors (its ``token_usage_record`` lines) and its model.

    Waited for (briefly) until the last response, the message ``last_text``, has its usage.
    """
    def read() -> tuple[list[list[int]], str, bool]:
        vectors: list[list[int]] = []
        model = ""
        done = not last_text
        seen = False  # the last response's message was just read: its usage is the next record
        # Assistant messages need not name their turn (0.169 does, in a metadata passthrough).
        for line in _turn_lines(path, turn_id, '"assistant"'):
            p = _item(line)
            kind = line.get("type")
            if kind == "turn_context" and p.get("turn_id") == turn_id and type(p.get("model")) is str:
                model = p["model"]
            elif kind == "token_usage_record" and p.get("turn_id") == turn_id:
                vec = usage.vector(p.get("usage"))
                if vec is not None:
                    vectors.append(vec)
                    done = done or seen
            elif kind == "response_item" and p.get("type") != "message":
                seen = False
            if kind == "response_item" and p.get("type") == "message" and p.get("role") == "assistant":
                texts = [c.get("text") for c in p.get("content") or () if type(c) is dict]
                seen = "\n".join(x for x in texts if type(x) is str).strip() == last_text.strip()
        return vectors, model, done

    vectors, model, _ = rollout_tail.wait_for(read, lambda x: bool(x[2]), FLUSH_WAIT_S, FLUSH_POLL_S)
    return vectors, model


def _stop(event: dict[str, Any], t: int, session: Session) -> list[Neutral]:
    stream = session.stream
    text = _str(event, "last_assistant_message")
    path, turn_id = _rollout(event), _str(event, "turn_id")
    vectors, model = _responses(path, turn_id, text) if turn_id else ([], "")
    provider = session.model.provider if session.model is not None else DEFAULT_PROVIDER
    ref = ModelRef(provider, clean(model)) if model else session.model
    if not vectors:
        return [AssistantMessage(stream, t, model=ref, text=text), RunEnd(stream, t, "stop")]
    out: list[Neutral] = []
    for i, vec in enumerate(vectors):
        last = i == len(vectors) - 1
        out.append(AssistantMessage(stream, t, model=ref, usage=usage.to_usage(vec), text=text if last else ""))
    out.append(RunEnd(stream, t, "stop"))
    return out


def records(event: dict[str, Any], t: int) -> list[Neutral]:
    """The neutral records of one Codex hook payload (see the module docstring); ``[]`` for others."""
    session = _session(event, t)
    if session is None:
        return []
    name = event.get("hook_event_name")
    stream = session.stream
    out: list[Neutral] = [session]
    turn_id = _str(event, "turn_id")
    if turn_id:
        out.append(TurnStarted(stream, t, turn_id))
    if name in ("SessionStart", "SubagentStart"):
        return out
    if name == "UserPromptSubmit":
        prompt = event.get("prompt")
        if type(prompt) is not str:
            return []
        mode = _mode(_rollout(event), turn_id) if turn_id else None
        if mode is not None:
            out.append(PermissionMode(stream, t, mode))
        out.append(UserMessage(stream, t, clean(prompt), source=PROMPT_SOURCE))
        return out
    if name == "PreToolUse":
        call = _call(event)
        return [*out, ToolStarted(stream, t, call)] if call is not None else []
    if name == "PermissionRequest":
        # The call is already started by its PreToolUse: restated (nothing new is recorded), so a
        # deny can mark it blocked. A command the model did not call (one of a script's) is none.
        asked = _asked_call(event)
        return [*out, ToolStarted(stream, t, asked, fallback=True)] if asked is not None else out
    if name == "PostToolUse":
        call = _call(event)
        if call is None:
            return []
        return [*out, ToolStarted(stream, t, call, fallback=True), _result(event, call, t, stream)]
    if name == "Stop":
        return [*out, *_stop(event, t, session)]
    if name == "SubagentStop" and session.agent_kind == "sub":
        return [*out, *_stop(event, t, session), SessionEnded(stream, t, "subagent_stop")]
    if name == "PostCompact":
        return [*out, Compaction(stream, t, _str(event, "trigger"))]
    if name == "SessionEnd":
        return [*out, SessionEnded(stream, t, _str(event, "reason"))]
    return []
