"""Values a plugin's saved state holds in memory but never saves: host input stays transient.

A plugin's translation state is saved in the ledger (see
:mod:`rematch_trace.store.states`) so that a grown file's import continues
where it stopped. What the state holds of the transcript itself (the text and
tool input of a response still open, a tool output's head waiting for it) is
original host input, which is never persisted (docs/security-events.md). A
plugin keeps such a value as a :class:`Sealed`: in memory it is the value; in
the saved JSON it is only what :meth:`Sealed.saved` gives, a reference to where
in the transcript the value was read (byte offsets) and a digest of it. A
continued import reads it again from there, and checks the digest (a
transcript changed there is read whole instead).

:func:`state_dumps` and :func:`state_loads` are the JSON of a saved state
(:mod:`rematch_trace.store.states` keeps it in the ledger): a :class:`Sealed`
value written as its reference, exact numbers exactly, lone surrogates escaped.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson

from rematch_trace.host.exactnum import json_default, parse_exact, parsed_exactly


class Sealed:
    """A value of a plugin's state saved as a reference, not as itself.

    :param value: the value, as the plugin uses it in memory.
    :param where: JSON-able, where the value is read again (the plugin's own
        convention: byte offsets of transcript lines, say).
    """

    __slots__ = ("value", "where")

    def __init__(self, value: Any, where: Any) -> None:
        self.value = value
        self.where = where

    def saved(self) -> dict[str, Any]:
        """What the saved state holds: ``{"at": where, "d": digest of value}``."""
        return {"at": self.where, "d": value_digest(self.value)}

    def matches(self, saved: Any) -> bool:
        """Whether ``saved`` (a :meth:`saved` of an earlier run) is this value's."""
        return isinstance(saved, dict) and saved.get("d") == value_digest(self.value)


def value_digest(value: Any) -> str:
    """A SHA-256 digest (hex, 128 bits) of a JSON-able value, exact numbers included."""
    return hashlib.sha256(state_dumps(value)).hexdigest()[:32]


def state_dumps(value: Any) -> bytes:
    """JSON of a saved state; lone surrogates (which orjson refuses) are escaped.

    Exact numbers (a tool input shown in a held-back record) are written exactly, a :class:`Sealed`
    value as its reference (:meth:`Sealed.saved`).
    """
    try:
        return orjson.dumps(value, default=_state_default)
    except orjson.JSONEncodeError:
        # (an exact number is written as its text here, as the record writer does)
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"), default=_fallback).encode()


def _state_default(value: Any) -> Any:
    """orjson's ``default=`` for a state: a Sealed value as its reference, an exact number exactly."""
    if isinstance(value, Sealed):
        return value.saved()
    return json_default(value)


def _fallback(value: Any) -> Any:
    """plain json's ``default=``: a Sealed value as its reference, anything else as its text."""
    return value.saved() if isinstance(value, Sealed) else str(value)


def state_loads(data: bytes) -> Any:
    """Read back :func:`state_dumps`, exact numbers exactly (so a resumed import writes them alike)."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return parse_exact(data)
    return value if parsed_exactly(data, value) else parse_exact(data)


__all__ = ["Sealed", "state_dumps", "state_loads", "value_digest"]
