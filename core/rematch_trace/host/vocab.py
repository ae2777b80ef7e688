"""The harness-neutral vocabulary a plugin translates its transcript into.

A harness plugin never writes trace records. It reads its own format and yields
the small records defined here, in the order the harness recorded them; the core
(:mod:`rematch_trace.trace.synth`) alone turns them into the trace, so every trace rule
(seq, prelabels, agent_end placement, pairing, truncation, hashing, flags) is
written once.

Every record carries a ``stream``: the key of the session it belongs to inside
one source file. Most files hold one session (stream ``""``); a Claude Code
1.0 file holds its inline sidechains too, each its own stream. A stream starts
with a :class:`Session` record, which the core requires before anything else of
that stream.

``t`` is unix milliseconds from the source's own timestamps, or ``None`` when
the source gave none (the core then carries the previous time forward).
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal

import attrs

from rematch_trace.errors import classify_error

#: The closed vocabulary of ``tool_result.error_class`` (``None`` on success).
ERROR_CLASSES: tuple[str, ...] = (
    "exit_nonzero",  # a command ran and exited with a non-zero status
    "timeout",  # the tool or command ran out of time
    "interrupted",  # the user or harness aborted the call while it ran
    "rejected",  # the user (or an approval policy) declined the call
    "sandbox",  # the sandbox denied the action
    "not_found",  # a file, path, command or tool that does not exist
    "permission",  # the operating system refused access
    "invalid_input",  # the call's arguments were malformed or failed validation
    "tool_error",  # any other failure the tool reported
)

AgentKind = Literal["main", "sub"]
#: Characters of a tool's output a plugin hands over as ``ToolResult.output_head``.
OUTPUT_HEAD_CHARS = 4096
#: Tool calls still waiting for their result are forgotten past this many per session
#: (a result that comes later is kept, unpaired).
MAX_PENDING_CALLS = 4096


@attrs.frozen(slots=True)
class ModelRef:
    """A model as ``{provider, id}``; ``provider`` is ``""`` when unknown."""

    provider: str
    id: str


@attrs.frozen(slots=True)
class Usage:
    """Token usage of one assistant message (one model call)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total: int = 0
    cost: float | None = None
    #: Of ``cache_write``, the tokens written for an hour (Anthropic's 1-hour cache, billed higher).
    cache_write_1h: int = 0


@attrs.frozen(slots=True)
class Session:
    """Opens a stream: the session's identity as the transcript states it.

    :param session_id: the harness's session id (untrusted; the core encodes it
        for file names).
    :param cwd: the working directory the session ran in, or ``""``.
    :param agent_kind: ``"main"``, or ``"sub"`` for a subagent's own session.
    :param agent_name: the subagent's name or type, when the harness gives one.
    :param harness_version: the version of the harness that wrote it
        (``session_start.omp_version``), or ``None``.
    :param parent_session_id: the spawning session of a subagent, if known.
    :param model: the session's model when the harness states it up front
        (live capture: Claude Code's ``SessionStart``), else ``None``.
    """

    stream: str
    t: int | None
    session_id: str
    cwd: str = ""
    agent_kind: AgentKind = "main"
    agent_name: str | None = None
    harness_version: str | None = None
    parent_session_id: str | None = None
    model: ModelRef | None = None


@attrs.frozen(slots=True)
class UserMessage:
    """A message a person typed (never injected, meta or tool-result text).

    Slash, ``!`` and ``%`` lines are passed through as typed: the core drops the
    ones the trace drops. ``skills`` names skills this message invoked in a way
    its text does not show (omp's skill-prompt messages, a Claude Code slash
    command that is a skill); ``/skill:`` tokens in ``text`` are read by the
    core itself.
    """

    stream: str
    t: int | None
    text: str
    skills: tuple[str, ...] = ()
    source: str = ""


@attrs.frozen(slots=True)
class ToolCall:
    """One tool call inside an assistant message; ``input`` is the original input."""

    id: str
    name: str
    input: Any


@attrs.frozen(slots=True)
class AssistantMessage:
    """One model response (a Claude Code response split over lines is one message).

    :param model: the model that answered, or ``None`` when the source omits it.
    :param usage: its token usage, counted once, or ``None``.
    :param stop_reason: the harness's stop reason as recorded, or ``None``.
    :param aborted: the response was cut off by the user (an interrupt).
    :param text: its visible text (no thinking), joined in order.
    :param tool_calls: its tool calls in order.
    """

    stream: str
    t: int | None
    model: ModelRef | None = None
    usage: Usage | None = None
    stop_reason: str | None = None
    aborted: bool = False
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


@attrs.frozen(slots=True)
class ToolResult:
    """The outcome of a tool call, paired by the core with its call by ``call_id``.

    :param output_bytes: the size in UTF-8 bytes of the full output as recorded.
    :param output_head: the start of the output (a few KiB), for the core's
        fallback error classifier and the security stream; never the whole output.
    :param is_error: the harness's own error flag, or ``None`` to let the core
        decide from ``output_head``.
    :param error_class: a structured class from :data:`ERROR_CLASSES`, when the
        harness says why; ``None`` lets the core classify.
    :param tool: the tool's name, for results whose call the stream never showed.
    """

    stream: str
    t: int | None
    call_id: str
    output_bytes: int = 0
    output_head: str = ""
    is_error: bool | None = None
    error_class: str | None = None
    tool: str | None = None


def result_error_class(rec: ToolResult) -> str:
    """A failed result's error class: the plugin's own, else the core's fallback on its head.

    The fallback is :func:`~rematch_trace.errors.classify_error` of ``output_head``.
    """
    given = rec.error_class
    if given is not None and given in ERROR_CLASSES:
        return given
    return classify_error(rec.output_head or "")


def settle_error_class(rec: ToolResult) -> ToolResult:
    """``rec`` with a failure's error class decided, so the trace and the event stream classify it once.

    A result that did not fail, or whose plugin gave a valid class, is returned as it is.
    """
    failed = bool(rec.is_error) if rec.is_error is not None else bool(rec.error_class)
    if not failed or rec.error_class in ERROR_CLASSES:
        return rec
    return attrs.evolve(rec, error_class=classify_error(rec.output_head or ""))


@attrs.frozen(slots=True)
class Abort:
    """The user aborted the previous assistant message (an Esc, an interrupt marker).

    The next :class:`UserMessage` is then not idle, and so an ``interrupt``.
    """

    stream: str
    t: int | None
    reason: str = "interrupted"


@attrs.frozen(slots=True)
class Compaction:
    """The harness compacted the context. No trace record; kept for consumers."""

    stream: str
    t: int | None
    trigger: str = ""


@attrs.frozen(slots=True)
class Instructions:
    """Text the harness injected as instructions (AGENTS.md, a skills catalog).

    The core asks the ``visible_entries`` hook which entries the text offers.
    ``path`` is the instruction file's path when the harness shows it being
    loaded (a security ``instruction_loaded`` event).
    """

    stream: str
    t: int | None
    text: str = ""
    path: str | None = None


@attrs.frozen(slots=True)
class SkillInvoked:
    """A skill invoked by a tool call (Claude Code's Skill tool, Codex's skill tools).

    Added to the ``skills_invoked`` of the input of the run it occurs in.
    """

    stream: str
    t: int | None
    name: str


@attrs.frozen(slots=True)
class EntryLoaded:
    """A skill or rule entry loaded into the session, for ``loaded_entries``."""

    stream: str
    t: int | None
    id: str
    version: str | None = None
    sha: str | None = None


@attrs.frozen(slots=True)
class MarkNote:
    """An explicit mark the harness recorded outside the user's text."""

    stream: str
    t: int | None
    cls: str
    note: str = ""


@attrs.frozen(slots=True)
class TurnStarted:
    """The harness's own turn (or prompt) id for the records that follow, until the next.

    No trace record: the security events carry it as ``source_turn_id`` and
    bind it in the action fingerprint. ``t`` is not read.
    """

    stream: str
    t: int | None
    turn_id: str


@attrs.frozen(slots=True)
class PermissionMode:
    """The harness's permission mode in force from here on (``metadata.host_permission_mode``).

    As the harness names it: Claude Code's ``permissionMode`` (``default``,
    ``plan``, ``acceptEdits``...), Codex's approval policy and sandbox
    (``on-request/workspace-write``). No trace record; ``t`` is not read.
    """

    stream: str
    t: int | None
    mode: str


# -- live capture only: facts a hook sees that no transcript records -----------------------


@attrs.frozen(slots=True)
class ToolStarted:
    """A tool call seen before (or without) its assistant message: a live ``PreToolUse``.

    ``call.input`` is the original input; the core digests it on arrival and
    keeps only the digests. ``fallback`` marks a call restated by a later hook
    (``PostToolUse`` repeats the input): used only when the call itself was
    never seen, so the input the model gave wins over one another hook rewrote.
    """

    stream: str
    t: int | None
    call: ToolCall
    fallback: bool = False


@attrs.frozen(slots=True)
class CallBlocked:
    """A call that will never complete because a hook or a permission check blocked it.

    :param hook_id: what blocked it, as the harness names it.
    :param reason: why, as the harness says (the core cuts and redacts it).
    """

    stream: str
    t: int | None
    call_id: str
    tool: str = ""
    hook_id: str = ""
    reason: str = ""


@attrs.frozen(slots=True)
class RunEnd:
    """The agent loop stopped: a live ``Stop``/``SubagentStop``/``StopFailure``, or an abort.

    ``reason`` is ``"stop"``, ``"failure"`` or ``"aborted"`` (the user pressed
    Esc: the run ended without a stop). The next input is then idle.
    ``terminal`` is ``False`` when the harness said its loop goes on by itself
    (omp's ``willContinue``, pi's queued messages): ``agent_end.is_terminal``.
    """

    stream: str
    t: int | None
    reason: str = "stop"
    terminal: bool = True


@attrs.frozen(slots=True)
class ModelSwitched:
    """The harness moved the session to another model between two turns, and said why.

    omp's ``retry_fallback_applied`` (auto-retry fell back to a configured model): the
    ``model_change`` is written now, with ``reason``, rather than at the next turn as ``turn``.
    """

    stream: str
    t: int | None
    model: ModelRef
    reason: str = ""


@attrs.frozen(slots=True)
class SessionEnded:
    """The session (or a subagent's) ended: a live ``SessionEnd``/``SubagentStop``.

    The core then writes ``files_changed``, ``session_shutdown``, the pending
    file and the ledger row. ``hash_budget_s`` is how long hashing ``files_changed``
    may take (``None``: the core's default, Claude Code's ``SessionEnd`` 0.5 s).

    ``lifetime``: the end of one process on the session (Claude Code's ``SessionEnd``), which a
    later process may resume: the final records are appended and committed, and a resume appends
    after them (one ``session_shutdown`` per lifetime; the plugin's import ends lifetimes where its
    transcript shows them, so the two agree). Otherwise a resume continues from before them.
    In an import, a plugin yields it where a process left the session (the synthesizer and the
    event sink then write that lifetime's final records and go on).
    """

    stream: str
    t: int | None
    reason: str = ""
    hash_budget_s: float | None = None
    lifetime: bool = False


#: Everything a plugin's ``to_trace_records`` or ``live_records`` may yield.
Neutral = (
    Session
    | UserMessage
    | AssistantMessage
    | ToolResult
    | Abort
    | Compaction
    | Instructions
    | SkillInvoked
    | EntryLoaded
    | MarkNote
    | TurnStarted
    | PermissionMode
    | ToolStarted
    | CallBlocked
    | RunEnd
    | ModelSwitched
    | SessionEnded
)

NEUTRAL_TYPES: tuple[type, ...] = (
    Session,
    UserMessage,
    AssistantMessage,
    ToolResult,
    Abort,
    Compaction,
    Instructions,
    SkillInvoked,
    EntryLoaded,
    MarkNote,
    TurnStarted,
    PermissionMode,
    ToolStarted,
    CallBlocked,
    RunEnd,
    ModelSwitched,
    SessionEnded,
)


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def _fits(value: Any, hint: Any) -> bool:
    if hint is Any:
        return True
    origin = typing.get_origin(hint)
    if origin is Literal:
        return value in typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        return any(_fits(value, h) for h in typing.get_args(hint))
    if origin is tuple:
        args = typing.get_args(hint)
        return isinstance(value, tuple) and all(_fits(v, args[0]) for v in value)
    if hint is type(None):
        return value is None
    if hint is int:
        return type(value) is int
    if hint is float:
        return isinstance(value, (int, float)) and type(value) is not bool
    return isinstance(value, hint)


def field_errors(rec: Any) -> list[str]:
    """How a vocabulary record's fields break their declared types (``[]`` when they hold).

    A plugin's record of the wrong type would otherwise fail later, in the core
    or in another plugin's hook (a ``cwd`` that is not a string reaches
    ``identify_place``), and be blamed on them.
    """
    cls = type(rec)
    if cls not in NEUTRAL_TYPES:
        return [f"{cls.__name__} is not a vocabulary record"]
    out = []
    for name, hint in _hints(cls).items():
        value = getattr(rec, name)
        if not _fits(value, hint):
            out.append(f"{cls.__name__}.{name} is {type(value).__name__} {value!r:.40}, not {_spell(hint)}")
        elif isinstance(value, tuple):
            out.extend(e for v in value if attrs.has(type(v)) for e in _nested(v))
        elif attrs.has(type(value)):
            out.extend(_nested(value))
    return out


def _nested(rec: Any) -> list[str]:
    out = []
    for name, hint in _hints(type(rec)).items():
        value = getattr(rec, name)
        if not _fits(value, hint):
            out.append(f"{type(rec).__name__}.{name} is {type(value).__name__} {value!r:.40}, not {_spell(hint)}")
    return out


def _spell(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")
