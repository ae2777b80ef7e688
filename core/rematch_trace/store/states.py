"""Saved states: the JSON a grown file's import continues from, typed at the edge.

A source's saved state (:class:`SavedState`: the byte offset reached, the
plugin's translation state, and per stream the session, the synthesizer's and
the event sink's states and the output lengths) is kept in the ledger as JSON.
It crosses that edge through :func:`converter` (cattrs), field by field in the
order the untyped dicts of earlier versions had, so the saved bytes are the
same and an older ledger's states still load (a field it lacks takes its
default). The parts that are JSON by nature (held trace records, the plugin's
own state) pass through as they are: restoring a state costs its parse, not a
walk over every value.

:func:`state_dumps` and :func:`state_loads` (from :mod:`rematch_trace.host.sealed`) are the JSON
itself: what orjson refuses (lone surrogates) still round-trips, and exact numbers stay exact.
"""

from __future__ import annotations

import functools
import typing
from typing import Any, TypeVar

import attrs

from rematch_trace.host.sealed import state_dumps, state_loads
from rematch_trace.security.sink_state import SinkState
from rematch_trace.trace.flags import FlagTracker
from rematch_trace.trace.synth_state import SynthState

T = TypeVar("T")


@attrs.define(slots=True)
class StreamState:
    """One stream (session) of a source: what continuing it needs."""

    #: The :class:`~rematch_trace.host.vocab.Session` record's fields.
    session: dict[str, Any]
    synth: SynthState
    #: ``None`` when the import wrote no event stream.
    sink: SinkState | None
    #: The lengths of the trace and events files the state goes with.
    trace_len: int
    events_len: int = 0
    #: The stored summary's fold over the trace up to ``trace_len`` (report/summary.py ``SummaryFold.state``),
    #: continued by the next import; ``None`` (states of earlier versions): the summary is folded whole.
    summary: dict[str, Any] | None = None


@attrs.define(slots=True)
class Detected:
    """How a plugin claimed a file: what continuing it needs instead of detecting it again.

    A continuation reuses it only while everything detection saw is as it was
    (see :func:`rematch_trace.importing.worker.kept_source`): the hint the file
    was found with, the plugin still loaded, and the head bytes it read inside
    the part whose fingerprints were just checked.
    """

    #: The harness hint of the location the file was found in (``None``: a path the user named).
    hint: str | None
    #: The plugin that claimed the file.
    plugin: str
    agent_kind: str = "main"
    compression: str = ""
    #: The parent session's file, as a string.
    parent: str | None = None


@attrs.define(slots=True)
class SavedState:
    """A source's state to continue from (what the ledger's ``saved`` column holds)."""

    #: The byte offset reading stopped at.
    offset: int = 0
    #: The plugin's translation state (its own JSON, see the ``to_trace_records`` hook).
    plugin: dict[str, Any] = attrs.field(factory=dict)
    streams: dict[str, StreamState] = attrs.field(factory=dict)
    #: The harness that claimed the file: a state is only continued by the same one.
    harness: str | None = None
    #: Leading bytes the harness rewrites in place, left out of the head fingerprint.
    head_skip: int = 0
    #: The journal generation of a continued import (the ledger holding it commits the resume).
    journal: str | None = None
    #: How the file was claimed (``None`` in states of earlier versions: the file is detected again).
    detected: Detected | None = None
    #: The source is rewritten whole by its harness (:attr:`Source.rewritten`): ``offset`` is the
    #: plugin's own position, and no byte of the kept part is compared.
    rewritten: bool = False


def _same(value: Any, _type: Any = None) -> Any:
    return value


#: Fields that are JSON by nature, passed through the converter as they are.
_JSON_FIELDS: dict[type, tuple[str, ...]] = {
    SynthState: ("session", "first_model", "visible", "loaded", "buffer", "prev_tokens", "calls", "turn",
                 "last_model", "counts", "held_skills"),
    SinkState: ("calls",),
    StreamState: ("session", "summary"),
    SavedState: ("plugin",),
}


#: The primitive types whose optional fields get hooks of their own (see :func:`_optional`).
_PRIMITIVES = (str, int, bool, float)


def _optional(cls: type) -> Any:
    """The structure hook of a ``cls | None`` field, ``cls`` a primitive: what the converter's own
    does (``None`` stays, anything else is ``cls(value)``), without its dispatch on each call."""

    def structure(value: Any, _type: Any = None) -> Any:
        return None if value is None else cls(value)

    return structure


def _primitive_optional(field: Any) -> type | None:
    """The primitive of a field typed ``primitive | None``, else ``None``."""
    args = typing.get_args(field.type)
    if len(args) == 2 and type(None) in args:
        inner = args[0] if args[1] is type(None) else args[1]
        if inner in _PRIMITIVES:
            return inner  # type: ignore[no-any-return]
    return None


@functools.cache
def converter() -> Any:
    """The cattrs converter of saved states (made on first use: a rerun with nothing to continue
    never needs it)."""
    import cattrs
    from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

    # Without detailed validation: a state that does not fit fails as a whole (and the file is
    # read whole); per-field error reports would cost each restore a try block per field.
    c = cattrs.Converter(detailed_validation=False)
    c.register_unstructure_hook(FlagTracker, FlagTracker.to_state)
    c.register_structure_hook(FlagTracker, lambda value, _type: FlagTracker.from_state(value))
    for cls in (SynthState, SinkState, Detected, StreamState, SavedState):
        fields = _JSON_FIELDS.get(cls, ())
        out: dict[str, Any] = {f: override(unstruct_hook=_same) for f in fields}
        into: dict[str, Any] = {f: override(struct_hook=_same) for f in fields}
        # An optional string or number (nine a continued stream restores and saves): hooks of
        # their own, each what the converter would do, without its per-call dispatch.
        for field in attrs.fields(attrs.resolve_types(cls)):
            primitive = _primitive_optional(field)
            if primitive is not None:
                out[field.name] = override(unstruct_hook=_same)
                into[field.name] = override(struct_hook=_optional(primitive))
        if cls is SavedState:
            out["journal"] = override(omit_if_default=True, unstruct_hook=_same)  # absent from a first import's state
            out["detected"] = override(omit_if_default=True)
            out["rewritten"] = override(omit_if_default=True)  # absent for a log (every state of earlier versions)
        elif cls is StreamState:
            out["summary"] = override(omit_if_default=True, unstruct_hook=_same)  # absent from earlier versions
        elif cls is SinkState:
            # Absent when no call was blocked (every import, and every state of earlier versions).
            out["blocked_calls"] = override(omit_if_default=True, unstruct_hook=_same)
            out["blocked"] = override(omit_if_default=True)
        elif cls is SynthState:
            # Absent when nothing is held in the trace (and so from every state of earlier versions).
            out["held"] = override(omit_if_default=True)
            out["held_skills"] = override(omit_if_default=True, unstruct_hook=_same)
            # Absent when no call was blocked (every import, and every state of earlier versions).
            out["blocked_calls"] = override(omit_if_default=True, unstruct_hook=_same)
        c.register_unstructure_hook(cls, make_dict_unstructure_fn(cls, c, **out))
        c.register_structure_hook(cls, make_dict_structure_fn(cls, c, **into))
    return c


def unstructure(value: Any) -> Any:
    """A typed state as the plain JSON-able data it is saved as."""
    return converter().unstructure(value)


def structure(data: Any, cls: type[T]) -> T:
    """The typed state of ``data`` (as :func:`unstructure` or an earlier version made it).

    Raises :class:`ValueError` when ``data`` is not such a state.
    """
    import cattrs

    if type(data) is not dict:  # (a list would pass as a state of defaults)
        raise ValueError(f"not a saved {cls.__name__}: a {type(data).__name__}")
    try:
        out: T = converter().structure(data, cls)
    except (cattrs.BaseValidationError, AttributeError, KeyError, TypeError) as err:
        raise ValueError(f"not a saved {cls.__name__}: {err}") from None
    return out


def dump_saved(state: SavedState) -> bytes:
    """The JSON the ledger keeps of ``state``."""
    return state_dumps(unstructure(state))


def load_saved(data: bytes) -> SavedState:
    """The :class:`SavedState` of :func:`dump_saved`'s bytes; :class:`ValueError` when it is none."""
    return structure(state_loads(data), SavedState)


__all__ = ["Detected", "SavedState", "StreamState", "converter", "dump_saved", "load_saved", "state_dumps", "state_loads",
           "structure", "unstructure"]
