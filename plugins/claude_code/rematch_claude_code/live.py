"""Claude Code hook payloads in, the core's neutral records out (live capture).

One payload (``docs: hooks``; ``claude-code-format.md`` part 2) becomes the
records it states, in order, each stream opened by its
:class:`~rematch_trace.host.vocab.Session`:

* a subagent's events (``agent_id``) belong to stream ``agent-<id>``, session
  ``<session_id>.agent-<id>`` (``sub``, parent ``session_id``): the name the
  importer gives a 2.1 subagent file, so the two agree;
* ``UserPromptSubmit`` is an input (``source: "prompt"``), preceded by a
  :class:`~rematch_trace.host.vocab.RunEnd` ``aborted`` when the transcript's
  last turn ended in an Esc (``[Request interrupted by user``): Claude Code
  runs no ``Stop`` hook then, and the input after an abort is not an
  interrupt of a running loop;
* ``PreToolUse`` a call, ``PostToolUse``/``PostToolUseFailure`` its result
  (restating the call, as a fallback), ``PermissionDenied`` a blocked call;
* ``Stop``/``StopFailure``/``SubagentStop`` the run's last response and its end,
  with the run's token usage read from the transcript's end
  (:mod:`.runusage`); ``SubagentStop`` and ``SessionEnd`` end their session;
  a ``SubagentStop`` whose own transcript (``agent_transcript_path``) does not
  exist is none: Claude Code's helper agents (the two ``/compact`` runs in
  2.1.328: no ``SubagentStart``, an empty ``agent_type``) write no file, so
  the import, whose authority is the transcript, has no session for them;
* ``InstructionsLoaded`` an instruction file loaded, and the rematch entry
  it is when a ``rematch.json`` sits beside it (:mod:`.entries`);
* the main session's ``SessionStart`` also lists the skill folders Claude
  Code offers it, as an :class:`~rematch_trace.host.vocab.Instructions` text
  that this plugin's ``visible_entries`` hook reads (:mod:`.skills`).

Every payload's ``prompt_id`` (Claude Code 2.1.196+: the turn's prompt, the
transcript's ``promptId``) is a :class:`~rematch_trace.host.vocab.TurnStarted`
and its ``permission_mode`` a :class:`~rematch_trace.host.vocab.PermissionMode`,
right after the Session record, as the import passes on the transcript's
``promptId`` and ``permissionMode``: the core decides what they bind.

Nothing here keeps the payload: records carry what the core digests.
"""

from __future__ import annotations

import os
import time
from typing import Any

import orjson

from rematch_trace.host.text import clean
from rematch_trace.host.vocab import OUTPUT_HEAD_CHARS as HEAD_CHARS
from rematch_trace.host.vocab import (
    AssistantMessage,
    CallBlocked,
    Instructions,
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
from rematch_trace.security.redact import default_redactor
from rematch_trace.trace.prelabel import normalize_mark

from . import skills
from .callids import call_id_from_transcript, subagent_of_call
from .commands import is_custom
from .entries import instruction_entry
from .runusage import Response, interrupted_results, open_regular, run_matches, run_responses, run_usage
from .translate import PROVIDER, clean_value, measure
from .usertext import INTERRUPT_PREFIX, classify

#: ``input.source`` of a prompt the user submitted.
PROMPT_SOURCE = "prompt"
#: The hook events about one tool call.
_TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionDenied"})
#: How much of the transcript's end is read to see whether the last turn was aborted.
TAIL_BYTES = 64 * 1024
#: How long a ``Stop`` waits for the run's last response to reach the transcript, and how often it looks.
FLUSH_WAIT_S = 0.5
FLUSH_POLL_S = 0.02
#: The longest stop reason kept from a ``StopFailure`` error.
STOP_REASON_CHARS = 64
#: How much of a ``StopFailure`` error is redacted (the reason kept is cut from that).
STOP_ERROR_CHARS = 16 * 1024


def _str(event: dict[str, Any], key: str) -> str:
    value = event.get(key)
    return clean(value) if type(value) is str else ""


def _model(value: Any) -> ModelRef | None:
    if type(value) is dict:
        value = value.get("id") or value.get("model")
    if type(value) is str and value:
        return ModelRef(PROVIDER, clean(value))
    return None


def _session(event: dict[str, Any], t: int) -> tuple[str, Session] | None:
    sid = _str(event, "session_id")
    if not sid:
        return None
    cwd = _str(event, "cwd")
    agent = _str(event, "agent_id")
    if not agent and "agent_id" not in event and event.get("hook_event_name") in _TOOL_EVENTS:
        # A version that did not name the subagent in its tool payloads: the call's file says whose it is.
        agent = subagent_of_call(_str(event, "transcript_path"), sid, _str(event, "tool_use_id")) or ""
    if agent:
        stream = f"agent-{agent}"
        name = _str(event, "agent_type") or None
        return stream, Session(stream, t, f"{sid}.agent-{agent}", cwd, "sub", name, None, sid)
    return "", Session("", t, sid, cwd, "main", None, None, None, _model(event.get("model")))


def _call(event: dict[str, Any]) -> ToolCall | None:
    """The payload's call; without ``tool_use_id`` (before 2.0.43) its id is the transcript's (:mod:`.callids`).

    ``None`` when no id can be had: the core logs the payload's tool event as not recorded.
    """
    call_id = _str(event, "tool_use_id")
    name = _str(event, "tool_name")
    if not name:
        return None
    if not call_id and "tool_use_id" not in event:
        call_id = call_id_from_transcript(_str(event, "transcript_path"), name, event.get("tool_input")) or ""
    if not call_id:
        return None
    return ToolCall(call_id, name, clean_value(event.get("tool_input")))


def _response(value: Any) -> tuple[int, str, bool]:
    """A ``tool_response``'s size and head, and whether it says the call was interrupted."""
    if type(value) is dict and ("stdout" in value or "stderr" in value):
        # Bash: the output the model sees is stdout, then stderr.
        parts = [v for v in (value.get("stdout"), value.get("stderr")) if type(v) is str and v]
        nbytes, head = measure("\n".join(parts))
        return nbytes, head, value.get("interrupted") is True
    nbytes, head = measure(value)
    return nbytes, head, False


def aborted_last_turn(transcript: str, prompt: str) -> bool:
    """Whether the transcript's last turn (before ``prompt``) ended in an Esc abort.

    Reads at most :data:`TAIL_BYTES` from the end; the newest user or
    assistant line decides (the new prompt itself, meta and tool-result-only
    lines are passed over).
    """
    if not transcript:
        return False
    fd = open_regular(transcript)  # a FIFO named here must not hang the hook
    if fd is None:
        return False
    try:
        size = os.fstat(fd).st_size
        tail = os.pread(fd, TAIL_BYTES, max(0, size - TAIL_BYTES))
    except OSError:
        return False
    finally:
        os.close(fd)
    for raw in reversed(tail.split(b"\n")[1:] if size > TAIL_BYTES else tail.split(b"\n")):
        if not raw.strip():
            continue
        try:
            line = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if type(line) is not dict:
            continue
        typ = line.get("type")
        if typ == "assistant":
            return False
        if typ != "user" or line.get("isMeta") is True:
            continue
        message = line.get("message")
        content = message.get("content") if type(message) is dict else None
        texts = [content] if type(content) is str else [
            b.get("text") for b in content or () if type(b) is dict and b.get("type") == "text"
        ] if type(content) is list else []
        texts = [x for x in texts if type(x) is str]
        if any(x.lstrip().startswith(INTERRUPT_PREFIX) for x in texts):
            return True
        if any(x.strip() and x.strip() != prompt.strip() for x in texts):
            return False  # the previous prompt: nothing aborted since
    return False


def _prompt_input(stream: str, t: int, text: str, event: dict[str, Any]) -> UserMessage:
    """A submitted prompt as the import reads it: a custom command's run is its arguments.

    The import makes a slash command that started a model run an input whose text is the
    arguments and whose skills name the command (``translate._command_input``); a mark stays
    as typed; a built-in command is passed on as typed, for the core to drop.
    """
    stripped = text.strip()
    if stripped.startswith("/") and normalize_mark(stripped) == stripped:
        parts = stripped[1:].split(None, 1)
        name = parts[0] if parts else ""
        if name and is_custom(name, _str(event, "cwd"), _str(event, "transcript_path")):
            args = parts[1].strip() if len(parts) > 1 else ""
            return UserMessage(stream, t, args, skills=(name,), source=PROMPT_SOURCE)
    return UserMessage(stream, t, text, source=PROMPT_SOURCE)


def _responses(path: str, last_text: str) -> list[Response] | None:
    """The run's responses in the transcript: the run whose last response says ``last_text``.

    Claude Code 2.1.328 runs the ``Stop`` hook before it has flushed the run's last response to
    the transcript: the file is read again, every :data:`FLUSH_POLL_S`, for at most
    :data:`FLUSH_WAIT_S` (below the hook client's deadline), until the newest run ends with the
    payload's text. Only past that is the run looked for by its text (the service may read the file
    once the loop went on: a blocking ``Stop`` hook, the next prompt; :func:`~.runusage.run_responses`),
    else the newest run: looking by text first would take an older run that ended with the same
    answer while the newest was not flushed yet (the rig's usage comparison failed so).
    """
    if not path:
        return None
    end = time.monotonic() + FLUSH_WAIT_S
    # The newest run first, until it ends with the payload's text: an older run may end with the same
    # text (a repeated answer), and searching by text before the newest run is flushed would take it.
    # A file not there yet is waited for too: a new session's transcript may first be written after
    # its first Stop began (the rig's first turn came out with no model and no usage so, under load).
    while True:
        newest = run_responses(path)
        if newest is not None and run_matches(newest, last_text):
            return newest
        if time.monotonic() >= end:
            break
        time.sleep(FLUSH_POLL_S)
    if newest is None:
        return None
    # Not the newest run: the loop went on before this Stop was read (a blocking Stop hook, the next
    # prompt). The newest run that ends with the payload's text, else the newest.
    found = run_responses(path, last_text)
    return found if found and run_matches(found, last_text) else newest


def _run_turns(stream: str, t: int, path: str, text: str, stop: str) -> list[Neutral]:
    """One ``AssistantMessage`` per response of the run, as the import's turn_ends (model, usage each).

    The last one carries the payload's text and stop; with nothing readable, that one alone.
    """
    found = _responses(path, text)
    if not found:
        return [AssistantMessage(stream, t, stop_reason=stop, text=text)]
    out: list[Neutral] = []
    for i, r in enumerate(found):
        model = ModelRef(PROVIDER, r.model) if r.model else None
        if i == len(found) - 1:
            out.append(AssistantMessage(stream, t, model=model, usage=r.usage, stop_reason=stop, text=text or r.text))
        else:
            out.append(AssistantMessage(stream, t, model=model, usage=r.usage, stop_reason=r.stop_reason,
                                        text=r.text))
    return out


def _unwritten_helper(event: dict[str, Any]) -> bool:
    """Whether a ``SubagentStop`` is a helper agent's that left no transcript file (see the module docstring).

    Only a payload that names the file is judged (versions without ``agent_transcript_path`` keep
    their subagents); a subagent that writes its file has it by its stop (its usage is read there).
    """
    if event.get("hook_event_name") != "SubagentStop":
        return False
    path = _str(event, "agent_transcript_path")
    return bool(path) and not os.path.lexists(path)


def records(event: dict[str, Any], t: int) -> list[Neutral]:
    """The neutral records of one hook payload (see the module docstring); ``[]`` for others."""
    if _unwritten_helper(event):
        return []
    opened = _session(event, t)
    if opened is None:
        return []
    stream, session = opened
    name = event.get("hook_event_name")
    out: list[Neutral] = [session]
    prompt_id = _str(event, "prompt_id")
    if prompt_id:
        out.append(TurnStarted(stream, t, prompt_id))
    mode = _str(event, "permission_mode")
    if mode:
        out.append(PermissionMode(stream, t, mode))
    if name == "SessionStart" or name == "SubagentStart":
        listing = skills.catalog(session.cwd) if name == "SessionStart" and not stream else None
        if listing is not None:
            out.append(Instructions(stream, t, listing))  # the core asks visible_entries about it
        return out
    if name == "UserPromptSubmit":
        prompt = event.get("prompt")
        if type(prompt) is not str:
            return []
        text = clean(prompt)
        if classify(text)[0] == "skip":
            # Text Claude Code itself submits (a background task's <task-notification>): the
            # import never reads it as typed, so neither does the live trace.
            return []
        path = _str(event, "transcript_path")
        if aborted_last_turn(path, prompt):
            # The aborted run's end, told before this prompt's turn starts (its records belong to
            # the run an Esc ended, as on import): the calls the Esc interrupted, which had no
            # PostToolUse, as their interrupted results; the run's responses, which had no Stop.
            ended: list[Neutral] = []
            for call_id, tool, nbytes, head in interrupted_results(path, prompt):
                ended.append(ToolResult(stream, t, call_id, nbytes, head[:HEAD_CHARS], True, "interrupted",
                                        tool or None))
            for r in run_responses(path, skip_prompt=prompt) or ():
                model = ModelRef(PROVIDER, r.model) if r.model else None
                ended.append(AssistantMessage(stream, t, model=model, usage=r.usage, stop_reason=r.stop_reason,
                                              text=r.text))
            ended.append(RunEnd(stream, t, "aborted"))
            out[1:1] = ended
        out.append(_prompt_input(stream, t, text, event))
        return out
    if name == "PreToolUse":
        call = _call(event)
        return [*out, ToolStarted(stream, t, call)] if call is not None else []
    if name == "PostToolUse" or name == "PostToolUseFailure":
        call = _call(event)
        if call is None:
            return []
        out.append(ToolStarted(stream, t, call, fallback=True))
        if name == "PostToolUse":
            nbytes, head, interrupted = _response(event.get("tool_response"))
            error_class = "interrupted" if interrupted else None
            out.append(ToolResult(stream, t, call.id, nbytes, head, interrupted, error_class, call.name))
        else:
            error = _str(event, "error")
            nbytes, head = measure(error)
            error_class = "interrupted" if event.get("is_interrupt") is True else None
            out.append(ToolResult(stream, t, call.id, nbytes, head[:HEAD_CHARS], True, error_class, call.name))
        return out
    if name == "PermissionDenied":
        call = _call(event)
        if call is None:
            return []
        out.append(ToolStarted(stream, t, call, fallback=True))
        out.append(CallBlocked(stream, t, call.id, call.name, "permission", _str(event, "reason")))
        return out
    if name in ("Stop", "SubagentStop", "StopFailure"):
        text = _str(event, "last_assistant_message")
        if name == "StopFailure":
            # The error is the harness's text (an API error may quote a key or a request): redacted
            # whole, as the events are, then cut (a cut first could leave half a secret unmatched).
            error = default_redactor().redact_text(_str(event, "error")[:STOP_ERROR_CHARS])
            stop = error[:STOP_REASON_CHARS] if error else "error"
        else:
            stop = "end_turn"
        if name == "SubagentStop":
            # A subagent's own file (its lines are all sidechain lines): the run's summed usage.
            usage = run_usage(_str(event, "agent_transcript_path"))
            out.append(AssistantMessage(stream, t, stop_reason=stop, text=text, usage=usage))
        else:
            out.extend(_run_turns(stream, t, _str(event, "transcript_path"), text, stop))
        out.append(RunEnd(stream, t, "failure" if name == "StopFailure" else "stop"))
        if name == "SubagentStop":
            out.append(SessionEnded(stream, t, "subagent_stop"))
        return out
    if name == "InstructionsLoaded":
        path = _str(event, "file_path")
        if not path:
            return []
        out.append(Instructions(stream, t, "", path))
        entry = instruction_entry(stream, t, path)
        return [*out, entry] if entry is not None else out
    if name == "SessionEnd":
        # A process's end: a resume appends after it (the import ends a lifetime at its cost-state line).
        return [*out, SessionEnded(stream, t, _str(event, "reason"), lifetime=True)]
    return []
