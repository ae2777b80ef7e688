"""Every string of a tool input, walked once for both streams.

Redaction asks whether any string (or key) of a tool input holds a trigger
before it copies anything, and the risk rules scan every string of the same
input (:func:`rematch_trace.security.risk.strings_of`). Both walk the input the
same way, one after the other, for every tool call; :func:`input_strings`
walks it once and remembers the last few inputs by identity, as
:func:`rematch_trace.trace.canonical.canonical_input` does for the canonical
bytes both streams hash.
"""

from __future__ import annotations

from typing import Any

#: The risk rules' limit on an input's text, in characters (``strings_of``'s default).
TEXT_LIMIT = 64 * 1024


class InputStrings:
    """The strings of one input, in :func:`~rematch_trace.security.risk.strings_of`'s order.

    :ivar parts: every string value and string key, depth first.
    :ivar others: the text of every other scalar and non-string key (``repr``/``str``):
        no part of the risk text, but part of what redaction's trigger check reads.
    :ivar limit: the ``strings_of`` limit the walk was made for.
    :ivar taken: how many of ``parts`` ``strings_of`` takes before its limit stops it.
    """

    __slots__ = ("_joined", "limit", "others", "parts", "taken")

    def __init__(self, value: Any, limit: int = TEXT_LIMIT) -> None:
        parts: list[str] = []
        others: list[str] = []
        size = 0
        taken = -1
        stack = [value]
        while stack:
            # strings_of stops here once its text is long enough: note how much it had.
            if taken < 0 and size >= limit:
                taken = len(parts)
            v = stack.pop()
            if isinstance(v, str):
                parts.append(v)
                size += len(v) + 1
            elif isinstance(v, dict):
                for k, x in v.items():
                    if isinstance(k, str):
                        parts.append(k)
                        size += len(k) + 1
                    else:
                        others.append(str(k))
                    stack.append(x)
            elif isinstance(v, list | tuple):
                stack.extend(reversed(v))
            else:
                others.append(repr(v))
        self.limit = limit
        self.parts = parts
        self.others = others
        self.taken = len(parts) if taken < 0 else taken
        self._joined: str | None = None

    def joined(self) -> str:
        """Every part, newline-joined (computed once)."""
        if self._joined is None:
            self._joined = "\n".join(self.parts)
        return self._joined

    def trigger_text(self) -> str:
        """Every string, key and scalar of the input, newline-joined: what a trigger check reads.

        No trigger holds a newline, so a trigger occurs in this text exactly
        when it occurs in one of the input's strings, whatever their order.
        """
        if not self.others:
            return self.joined()
        return self.joined() + "\n" + "\n".join(self.others)

    def text(self) -> str:
        """``strings_of(value, limit)`` (:func:`~rematch_trace.security.risk.strings_of`), for the limit walked with."""
        if self.taken == len(self.parts):
            return self.joined()[: self.limit]
        return "\n".join(self.parts[: self.taken])[: self.limit]


# Redaction and the risk rules read the same input one after the other: remember
# the last few walks by identity (holding the object, so its id cannot be reused
# while it is remembered).
_MEMO: dict[int, tuple[Any, InputStrings]] = {}


def input_strings(value: Any) -> InputStrings:
    """The :class:`InputStrings` of ``value`` (at :data:`TEXT_LIMIT`), walked once per input object."""
    key = id(value)
    hit = _MEMO.get(key)
    if hit is not None and hit[0] is value:
        return hit[1]
    strings = InputStrings(value)
    if len(_MEMO) >= 16:
        _MEMO.clear()
    _MEMO[key] = (value, strings)
    return strings


__all__ = ["TEXT_LIMIT", "InputStrings", "input_strings"]
