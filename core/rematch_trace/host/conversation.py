"""The neutral conversation items a plugin's ``conversation_items`` hook yields.

The trace keeps what the schema keeps (a prompt, a turn's first 2 KB of text, a
call's input, an output's size). The conversation view and the search index
want what was said and shown: every piece of the assistant's text in the order
it came, each call's output or error text, compactions, and which call started
which subagent. A plugin reads these from its own transcript and yields the
small records below, in the order the transcript holds them; the core orders,
redacts, folds and renders them (:mod:`rematch_trace.conversation`).

A stream opens with a :class:`~rematch_trace.host.vocab.Session` record, as in
``to_trace_records``: its ``session_id`` must be the one the trace of that
stream has, so the core can tell whose items they are. Every text is handed
over as the transcript holds it; the core redacts it before anything is shown
or indexed.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from rematch_trace.host.vocab import Session

Role = Literal["user", "assistant"]


@attrs.frozen(slots=True)
class Said:
    """Text a person typed (``role="user"``: a prompt) or the assistant wrote (its visible text, no thinking)."""

    stream: str
    t: int | None
    role: Role
    text: str


@attrs.frozen(slots=True)
class Called:
    """A tool call as the assistant made it: its id, the tool's name and its original input."""

    stream: str
    t: int | None
    call_id: str
    name: str
    input: Any


@attrs.frozen(slots=True)
class Returned:
    """What a tool call gave back: its whole output or error text, as the transcript holds it.

    :param is_error: the harness's own error flag, or ``None`` when it does not say.
    """

    stream: str
    t: int | None
    call_id: str
    output: str
    is_error: bool | None = None


@attrs.frozen(slots=True)
class Compacted:
    """The harness compacted the context: what set it off and the summary it continued with, when known."""

    stream: str
    t: int | None
    trigger: str = ""
    summary: str = ""


@attrs.frozen(slots=True)
class Spawned:
    """The call ``call_id`` started the subagent session ``session_id`` (the id its own trace has)."""

    stream: str
    t: int | None
    call_id: str
    session_id: str


#: Everything a plugin's ``conversation_items`` may yield.
Item = Session | Said | Called | Returned | Compacted | Spawned
ITEM_TYPES: tuple[type, ...] = (Session, Said, Called, Returned, Compacted, Spawned)


def item_errors(item: Any) -> list[str]:
    """How a conversation item's fields break their declared types (``[]`` when they hold)."""
    from rematch_trace.host.vocab import _fits, _hints, _spell, field_errors

    cls = type(item)
    if cls is Session:
        return field_errors(item)
    if cls not in ITEM_TYPES:
        return [f"{cls.__name__} is not a conversation item"]
    out = []
    for name, hint in _hints(cls).items():
        if name == "input":
            continue  # any JSON value, as the harness recorded it
        value = getattr(item, name)
        if not _fits(value, hint):
            out.append(f"{cls.__name__}.{name} is {type(value).__name__} {value!r:.40}, not {_spell(hint)}")
    return out
