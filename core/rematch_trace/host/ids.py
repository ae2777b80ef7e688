"""Id fields a plugin fills are ids: a call id, a turn id, a session id that is text, or a credential, is not kept.

A plugin (or the hostile transcript it reads) can put anything in an id field:
``call_id``, ``turn_id``, ``session_id``. Ids are copied as they are into the
trace, the security events, the search index, the report and the conversation
JSON, where text fields are redacted and ids are not. So every id of every
neutral record is checked where records enter the core (:class:`~rematch_trace.
host.facade.Host`'s ``translate``, ``live`` and ``conversation``): an id keeps
its value when it has an id's shape (:data:`ID_SHAPE`) and the credential check
finds nothing in it; else it becomes ``redacted-`` and 20 hex digits of its
SHA-256, the same for the same value, so a call and its result still pair.

The credential check is the security room's redactor, which registers itself
here (:func:`register_credential_check`) when it is imported: this room imports
nothing above it. Until one is registered only the shape is checked.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any

import attrs

from rematch_trace.host import conversation as conv
from rematch_trace.host import vocab

#: What an id looks like: UUIDs, ``toolu_…``, ``call_…``, ``a1b2.c3``, ``agent-…``, ``permission-…``, and
#: Gemini CLI's subagent streams ``<session uuid>#<n>-<n>``.
ID_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+=/#-]{0,255}")
#: The harnesses' own id forms (Claude Code's ``toolu_…``, Codex's ``call_…``, UUIDs and a subagent's
#: ``<uuid>.agent-…``): no credential has them, so the credential check (a few µs an id) is skipped.
KNOWN_FORM = re.compile(r"(?:toolu|call|fc)_[A-Za-z0-9]{16,48}"
                        r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?:\.agent-[A-Za-z0-9_-]{1,64}|#[0-9]{1,9}-[0-9]{1,9})?")
#: Ids remembered with their verdict (each call's id comes again with its result).
_CACHE_LIMIT = 1 << 16

_check: list[Callable[[str], bool]] = []
_seen: dict[str, str] = {}


def register_credential_check(found: Callable[[str], bool]) -> None:
    """Use ``found(text)`` (whether ``text`` holds a credential) on every id from now on."""
    _check[:] = [found]
    _seen.clear()


def clean_id(value: str) -> str:
    """``value`` when it is an id holding no credential, else ``redacted-<20 hex of its SHA-256>``."""
    known = _seen.get(value)
    if known is not None:
        return known
    ok = type(value) is str and (KNOWN_FORM.fullmatch(value) is not None or (
        ID_SHAPE.fullmatch(value) is not None and not any(f(value) for f in _check)))
    out = value if ok else "redacted-" + hashlib.sha256(str(value).encode("utf-8", "surrogatepass")).hexdigest()[:20]
    if len(_seen) >= _CACHE_LIMIT:
        _seen.clear()
    _seen[value] = out
    return out


def _opt(value: str | None) -> str | None:
    return value if not value else clean_id(value)


def _call(c: vocab.ToolCall) -> vocab.ToolCall:
    new = clean_id(c.id) if isinstance(c.id, str) else c.id
    return c if new == c.id else attrs.evolve(c, id=new)


def _message(rec: vocab.AssistantMessage) -> vocab.AssistantMessage:
    calls = tuple(_call(c) for c in rec.tool_calls)
    return rec if all(a is b for a, b in zip(calls, rec.tool_calls, strict=True)) else attrs.evolve(
        rec, tool_calls=calls)


def _call_id(rec: Any) -> Any:
    if not isinstance(rec.call_id, str) or not rec.call_id:
        return rec
    new = clean_id(rec.call_id)
    return rec if new == rec.call_id else attrs.evolve(rec, call_id=new)


def _started(rec: vocab.ToolStarted) -> vocab.ToolStarted:
    call = _call(rec.call)
    return rec if call is rec.call else attrs.evolve(rec, call=call)


def _turn(rec: vocab.TurnStarted) -> vocab.TurnStarted:
    if not isinstance(rec.turn_id, str) or not rec.turn_id:
        return rec
    new = clean_id(rec.turn_id)
    return rec if new == rec.turn_id else attrs.evolve(rec, turn_id=new)


def _session(rec: vocab.Session) -> vocab.Session:
    if not isinstance(rec.session_id, str):
        return rec
    sid, parent = clean_id(rec.session_id) if rec.session_id else rec.session_id, _opt(rec.parent_session_id)
    if sid == rec.session_id and parent == rec.parent_session_id:
        return rec
    return attrs.evolve(rec, session_id=sid, parent_session_id=parent)


def _spawned(rec: conv.Spawned) -> conv.Spawned:
    if not isinstance(rec.call_id, str) or not isinstance(rec.session_id, str):
        return rec
    cid, sid = clean_id(rec.call_id), clean_id(rec.session_id)
    return rec if (cid, sid) == (rec.call_id, rec.session_id) else attrs.evolve(rec, call_id=cid, session_id=sid)


#: The record types that carry ids, each with what cleans them (found by exact type: one look per record).
_CLEANERS: dict[type, Callable[[Any], Any]] = {
    vocab.AssistantMessage: _message, vocab.ToolResult: _call_id, vocab.CallBlocked: _call_id,
    conv.Called: _call_id, conv.Returned: _call_id, vocab.ToolStarted: _started, vocab.TurnStarted: _turn,
    vocab.Session: _session, conv.Spawned: _spawned,
}


def clean_record(rec: Any) -> Any:
    """``rec`` (a neutral or conversation record) with each of its id fields through :func:`clean_id`."""
    cleaner = _CLEANERS.get(type(rec))
    return rec if cleaner is None else cleaner(rec)


__all__ = ["ID_SHAPE", "KNOWN_FORM", "clean_id", "clean_record", "register_credential_check"]
