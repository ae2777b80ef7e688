"""Exact action binding: the SHA-256 fingerprint of one observed tool call.

The digest is taken over the RFC 8785 canonical JSON
(:func:`rematch_trace.trace.canonical.canonical_json`) of one object with fixed keys::

    {
      "v": 1,                       # the container's version
      "provider": "claude_code",    # the harness that recorded the call
      "session": "<session id>",
      "agent_sub_id": null,         # the subagent's session id, or null for the main agent
      "turn": null,                 # the source's turn id, or null when unknown
      "tool_call_id": "<call id>",
      "tool_name": "Bash",
      "cwd": "/work/dir",
      "tool_input": <the original, unredacted, untruncated input>
    }

and ``"nonce"`` (a live invocation's fresh random nonce) only when one is
given: imports bind recorded invocations, which have none, and so stay
deterministic. Canonical JSON makes key order and whitespace irrelevant; every
field is inside one JSON object, so no two distinct tuples share an encoding.
A number with no exact canonical form (an integer beyond ±(2^53-1), a
non-finite or inexact decimal) raises
:class:`~rematch_trace.errors.NonExactNumber` rather than being rounded into
another action's fingerprint.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from rematch_trace.errors import NonExactNumber
from rematch_trace.trace.canonical import canonical_input, canonical_json

#: The version of the fingerprint container (the ``"v"`` key).
FINGERPRINT_VERSION = 1


def fingerprint_container(
    provider: str,
    session: str,
    turn: str | None,
    tool_call_id: str,
    tool_name: str,
    cwd: str,
    tool_input: Any,
    agent_sub_id: str | None = None,
    nonce: str | None = None,
) -> dict[str, Any]:
    """The object whose canonical JSON is hashed (see the module docstring)."""
    container: dict[str, Any] = {
        "v": FINGERPRINT_VERSION,
        "provider": provider,
        "session": session,
        "agent_sub_id": agent_sub_id,
        "turn": turn,
        "tool_call_id": tool_call_id,
        "tool_name": tool_name,
        "cwd": cwd,
        "tool_input": tool_input,
    }
    if nonce is not None:
        container["nonce"] = nonce
    return container


def action_fingerprint(
    provider: str,
    session: str,
    turn: str | None,
    tool_call_id: str,
    tool_name: str,
    cwd: str,
    tool_input: Any,
    agent_sub_id: str | None = None,
    nonce: str | None = None,
) -> str:
    """SHA-256 (lowercase hex) binding one tool call to its exact original input.

    :raises NonExactNumber: when ``tool_input`` holds a number with no exact
        canonical representation, or a value that is not JSON.
    """
    if nonce is None:
        digest = _fast_digest(provider, session, turn, tool_call_id, tool_name, cwd, tool_input, agent_sub_id)
        if digest is not None:
            return digest
    container = fingerprint_container(
        provider, session, turn, tool_call_id, tool_name, cwd, None, agent_sub_id, nonce
    )
    try:
        # The canonical form of an object is its members in key order: the input's
        # own canonical bytes (computed once, shared with args_hash) take the
        # place of the null that stands in for them.
        frame = canonical_json(container)
        data = frame.replace(b'"tool_input":null', b'"tool_input":' + canonical_input(tool_input), 1)
    except RecursionError:
        raise NonExactNumber("tool input is nested too deeply to canonicalise") from None
    except (TypeError, ValueError) as err:
        if isinstance(err, NonExactNumber):
            raise
        raise NonExactNumber("tool input holds a value that is not JSON") from None
    return hashlib.sha256(data).hexdigest()


# The members before "tool_call_id" are the same for every call of a session:
# their hash state is kept for the last session seen and copied per call.
_PREFIX: dict[tuple[str, str, str | None, str], Any] = {}


def _json_str(value: str | None) -> bytes | None:
    """The canonical JSON of a string or null; ``None`` when a string has no UTF-8 form."""
    if value is None:
        return b"null"
    try:
        # orjson writes a string as RFC 8785 does (the same holds in canonical_json's fast path).
        return orjson.dumps(value)
    except orjson.JSONEncodeError:  # a lone surrogate: the general path escapes it
        return None


def _fast_digest(
    provider: str,
    session: str,
    turn: str | None,
    tool_call_id: str,
    tool_name: str,
    cwd: str,
    tool_input: Any,
    agent_sub_id: str | None,
) -> str | None:
    """The fingerprint of a nonce-less call, hashed member by member in key order.

    Equal to hashing the canonical container when every member is a string (or
    null where allowed) with a UTF-8 form; ``None`` otherwise, and the caller
    takes the general path.
    """
    if (
        type(provider) is not str
        or type(session) is not str
        or type(cwd) is not str
        or type(tool_call_id) is not str
        or type(tool_name) is not str
        or not (turn is None or type(turn) is str)
        or not (agent_sub_id is None or type(agent_sub_id) is str)
    ):
        return None
    key = (provider, session, agent_sub_id, cwd)
    base = _PREFIX.get(key)
    if base is None:
        base = _session_prefix(provider, session, cwd, agent_sub_id)
        if base is None:
            return None
        if len(_PREFIX) >= 64:
            _PREFIX.clear()
        _PREFIX[key] = base
    call_j, name_j, turn_j = _json_str(tool_call_id), _json_str(tool_name), _json_str(turn)
    if call_j is None or name_j is None or turn_j is None:
        return None
    return _call_digest(base, call_j, name_j, turn_j, tool_input)


def _session_prefix(provider: str, session: str, cwd: str, agent_sub_id: str | None) -> Any:
    """The hash state of the members before ``"tool_call_id"``; ``None`` when one has no UTF-8 form."""
    sub_j, cwd_j = _json_str(agent_sub_id), _json_str(cwd)
    provider_j, session_j = _json_str(provider), _json_str(session)
    if sub_j is None or cwd_j is None or provider_j is None or session_j is None:
        return None
    return hashlib.sha256(
        b'{"agent_sub_id":' + sub_j + b',"cwd":' + cwd_j + b',"provider":' + provider_j
        + b',"session":' + session_j + b',"tool_call_id":'
    )


def _call_digest(base: Any, call_j: bytes, name_j: bytes, turn_j: bytes, tool_input: Any) -> str:
    """The digest from the session's prefix state and the call's members (JSON), in key order."""
    try:
        canon = canonical_input(tool_input)
    except RecursionError:
        raise NonExactNumber("tool input is nested too deeply to canonicalise") from None
    except (TypeError, ValueError) as err:
        if isinstance(err, NonExactNumber):
            raise
        raise NonExactNumber("tool input holds a value that is not JSON") from None
    h = base.copy()
    h.update(call_j + b',"tool_input":' + canon + b',"tool_name":' + name_j + b',"turn":' + turn_j + _V_TAIL)
    digest: str = h.hexdigest()
    return digest


class SessionFingerprints:
    """:func:`action_fingerprint` of one session's nonce-less calls, its shared members hashed once.

    ``SessionFingerprints(provider, session, cwd, agent_sub_id)(turn, tool_call_id,
    tool_name, tool_input)`` is ``action_fingerprint(provider, session, turn,
    tool_call_id, tool_name, cwd, tool_input, agent_sub_id)``: the same digest,
    computed the same way member by member (or by the general path where
    :func:`action_fingerprint` takes it), without checking the session's
    members and looking their hash state up again for every call.
    """

    __slots__ = ("_base", "_session", "_turn", "_turn_j")

    def __init__(self, provider: str, session: str, cwd: str, agent_sub_id: str | None) -> None:
        self._session = (provider, session, cwd, agent_sub_id)
        ok = all(type(v) is str for v in (provider, session, cwd)) and (agent_sub_id is None or type(agent_sub_id) is str)
        self._base = _session_prefix(provider, session, cwd, agent_sub_id) if ok else None
        # The calls of a turn follow one another: the turn's JSON is kept for the next call.
        self._turn: object = _NO_TURN
        self._turn_j: bytes | None = None

    def __call__(self, turn: str | None, tool_call_id: str, tool_name: str, tool_input: Any) -> str:
        """The fingerprint of one call of the session (see the class docstring).

        :raises NonExactNumber: as :func:`action_fingerprint` does.
        """
        base = self._base
        if base is not None and type(tool_call_id) is str and type(tool_name) is str:
            if turn is not self._turn:
                self._turn = turn
                self._turn_j = _json_str(turn) if turn is None or type(turn) is str else None
            turn_j = self._turn_j
            call_j, name_j = _json_str(tool_call_id), _json_str(tool_name)
            if turn_j is not None and call_j is not None and name_j is not None:
                return _call_digest(base, call_j, name_j, turn_j, tool_input)
        provider, session, cwd, sub = self._session
        return action_fingerprint(provider, session, turn, tool_call_id, tool_name, cwd, tool_input, sub)


_NO_TURN = object()
_V_TAIL = b',"v":' + str(FINGERPRINT_VERSION).encode() + b"}"

__all__ = ["FINGERPRINT_VERSION", "NonExactNumber", "SessionFingerprints", "action_fingerprint", "fingerprint_container"]
