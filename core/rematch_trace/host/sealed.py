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
"""

from __future__ import annotations

import hashlib
from typing import Any


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
    from rematch_trace.store.states import state_dumps

    return hashlib.sha256(state_dumps(value)).hexdigest()[:32]


__all__ = ["Sealed", "value_digest"]
