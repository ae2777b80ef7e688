"""The IPC v2 messages: a request, a verdict reply, and the control channel's reply.

Messages are plain dicts typed as :class:`~typing.TypedDict` rather than attrs
records: a hook process imports this module on every tool call, and attrs
alone costs ~20 ms to import. Each ``check_*`` function takes a decoded JSON
value and returns it typed, or raises :class:`~rematch_trace.live.ipc.codec.DecodeError`
with the code of the first fault, checked in a fixed order: the version, then
unexpected fields, then missing ones, then each field's type and domain.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal, TypedDict

from rematch_trace.live.ipc.codec import MAX_EXACT_INT, PROTOCOL_VERSION, DecodeError

Decision = Literal["no_override", "deny"]

#: What a reply may decide. ``no_override`` leaves the host's own permissions in force; it grants nothing.
DECISIONS: tuple[str, ...] = ("no_override", "deny")
#: Who decided a reply.
DECISION_SOURCES: tuple[str, ...] = (
    "local_rules", "demo_provider", "model_provider", "approval", "service", "protocol_error", "fail_open",
)
#: A reply's ``tool_class``: the event's action type, or ``unknown`` when none was derived.
TOOL_CLASSES: tuple[str, ...] = (
    "shell_exec", "file_read", "file_write", "file_edit", "network", "mcp", "subagent", "other", "unknown",
)
#: The request kinds of the control channel (never accepted on the event channel).
CONTROL_KINDS: tuple[str, ...] = ("list_approvals", "show_approval", "decide_approval", "request_code")
#: States of an approval; every state but ``pending`` is terminal.
APPROVAL_STATES: tuple[str, ...] = ("pending", "approved", "denied", "expired", "cancelled")
#: Longest reply explanation, in characters.
MAX_EXPLANATION = 1024
#: Most approvals one control reply lists.
MAX_LISTED_APPROVALS = 16
#: Longest ``command_head`` and ``command_tail`` of an approval, in characters (one ``show_approval``
#: reply bounds them together in bytes); most ``risky_parts`` and the longest of them.
MAX_COMMAND_PART = 9_000
MAX_RISKY_PARTS = 8
MAX_RISKY_PART = 240
#: Longest span from ``received_at_ms`` to ``hard_deadline_ms``.
MAX_DEADLINE_SPAN_MS = 600_000

_REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_KIND = re.compile(r"[a-z][a-z0-9_]{0,63}")
_ADAPTER = re.compile(r"[a-z][a-z0-9_.-]{0,63}")
_VERSION_TEXT = re.compile(r"[\x21-\x7e][\x20-\x7e]{0,63}")
_NONCE = re.compile(r"[0-9a-f]{32}")
_REASON = re.compile(r"[a-z0-9][a-z0-9_.:-]{0,63}")
_INCIDENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
_APPROVAL_ID = re.compile(r"[0-9a-f]{12}")
_FINGERPRINT = re.compile(r"[0-9a-f]{64}")


class Request(TypedDict):
    """A v2 request (``docs/ipc-v2.md`` describes every field)."""

    protocol_version: int
    request_id: str
    request_kind: str
    adapter: str
    adapter_version: str
    received_at_ms: int
    hard_deadline_ms: int
    host_version: str
    invocation_nonce: str
    host_payload: dict[str, Any]


class Reply(TypedDict):
    """A v2 verdict reply."""

    protocol_version: int
    request_id: str | None
    decision: Decision
    reason: str
    explanation: str
    incident_id: str | None
    decision_source: str
    tool_class: str
    execution_observed: Literal["unknown"]


class ApprovalView(TypedDict):
    """One approval as the control channel lists it (no original input: a redacted summary)."""

    approval_id: str
    state: str
    adapter: str
    session: str
    agent_sub_id: str | None
    tool_name: str
    tool_class: str
    summary: str
    risk_features: list[str]
    rule: str
    action_fingerprint: str
    invocation_nonce: str
    event_fingerprint: str | None
    expires_in_ms: int
    command_chars: int
    command_head: str
    command_tail: str
    command_hidden: int
    risky_parts: list[str]
    risky_total: int


class ControlReply(TypedDict):
    """A control channel reply."""

    protocol_version: int
    request_id: str | None
    ok: bool
    error: str | None
    message: str
    approvals: list[ApprovalView]


# --- field checkers ---------------------------------------------------------------------------

Check = Callable[[str, Any], None]


def _fail(code: str, field: str, why: str) -> DecodeError:
    return DecodeError(code, f"{field}: {why}")


def _int(lo: int, hi: int) -> Check:
    def check(field: str, v: Any) -> None:
        if type(v) is not int:
            raise _fail("wrong_type", field, "must be an integer")
        if not lo <= v <= hi:
            raise _fail("invalid_value", field, f"must be in [{lo}, {hi}]")

    return check


def _text(pattern: re.Pattern[str] | None, *, limit: int = 0, nullable: bool = False) -> Check:
    def check(field: str, v: Any) -> None:
        if v is None and nullable:
            return
        if type(v) is not str:
            raise _fail("wrong_type", field, "must be a string" + (" or null" if nullable else ""))
        if pattern is not None and not pattern.fullmatch(v):
            raise _fail("invalid_value", field, f"must match {pattern.pattern}")
        if limit and len(v) > limit:
            raise _fail("invalid_value", field, f"longer than {limit} characters")

    return check


def _enum(values: tuple[str, ...]) -> Check:
    def check(field: str, v: Any) -> None:
        if type(v) is not str:
            raise _fail("wrong_type", field, "must be a string")
        if v not in values:
            raise _fail("invalid_value", field, f"must be one of {', '.join(values)}")

    return check


def _object(field: str, v: Any) -> None:
    if type(v) is not dict:
        raise _fail("wrong_type", field, "must be an object")


def _bool(field: str, v: Any) -> None:
    if type(v) is not bool:
        raise _fail("wrong_type", field, "must be true or false")


def _strings(limit: int, each: int) -> Check:
    def check(field: str, v: Any) -> None:
        if type(v) is not list or any(type(x) is not str for x in v):
            raise _fail("wrong_type", field, "must be an array of strings")
        if len(v) > limit or any(len(x) > each for x in v):
            raise _fail("invalid_value", field, f"at most {limit} strings of {each} characters")

    return check


def _check(obj: Any, spec: dict[str, Check], what: str) -> dict[str, Any]:
    if type(obj) is not dict:
        raise DecodeError("wrong_type", f"a {what} must be a JSON object")
    if "protocol_version" in obj:
        v = obj["protocol_version"]
        if type(v) is not int:
            raise _fail("wrong_type", "protocol_version", "must be an integer")
        if v != PROTOCOL_VERSION:
            raise DecodeError("unsupported_version", f"protocol_version {v}; this side speaks {PROTOCOL_VERSION}")
    for k in obj:
        if k not in spec:
            raise DecodeError("unexpected_field", f"{k[:64]!r} is not a field of a {what}")
    for k in spec:
        if k not in obj:
            raise DecodeError("missing_field", f"a {what} needs {k!r}")
    for k, check in spec.items():
        check(k, obj[k])
    return obj


_REQUEST_SPEC: dict[str, Check] = {
    "protocol_version": _int(PROTOCOL_VERSION, PROTOCOL_VERSION),
    "request_id": _text(_REQUEST_ID),
    "request_kind": _text(_KIND),
    "adapter": _text(_ADAPTER),
    "adapter_version": _text(_VERSION_TEXT),
    "received_at_ms": _int(0, MAX_EXACT_INT),
    "hard_deadline_ms": _int(1, MAX_EXACT_INT),
    "host_version": _text(_VERSION_TEXT),
    "invocation_nonce": _text(_NONCE),
    "host_payload": _object,
}

_REPLY_SPEC: dict[str, Check] = {
    "protocol_version": _int(PROTOCOL_VERSION, PROTOCOL_VERSION),
    "request_id": _text(_REQUEST_ID, nullable=True),
    "decision": _enum(DECISIONS),
    "reason": _text(_REASON),
    "explanation": _text(None, limit=MAX_EXPLANATION),
    "incident_id": _text(_INCIDENT, nullable=True),
    "decision_source": _enum(DECISION_SOURCES),
    "tool_class": _enum(TOOL_CLASSES),
    "execution_observed": _enum(("unknown",)),
}

_APPROVAL_SPEC: dict[str, Check] = {
    "approval_id": _text(_APPROVAL_ID),
    "state": _enum(APPROVAL_STATES),
    "adapter": _text(_ADAPTER),
    "session": _text(None, limit=256),
    "agent_sub_id": _text(None, limit=256, nullable=True),
    "tool_name": _text(None, limit=256),
    "tool_class": _enum(TOOL_CLASSES),
    "summary": _text(None, limit=256),
    "risk_features": _strings(16, 64),
    "rule": _text(_REASON),
    "action_fingerprint": _text(_FINGERPRINT),
    "invocation_nonce": _text(_NONCE),
    "event_fingerprint": _text(_FINGERPRINT, nullable=True),
    "expires_in_ms": _int(0, MAX_EXACT_INT),
    "command_chars": _int(0, MAX_EXACT_INT),
    "command_head": _text(None, limit=MAX_COMMAND_PART),
    "command_tail": _text(None, limit=MAX_COMMAND_PART),
    "command_hidden": _int(0, MAX_EXACT_INT),
    "risky_parts": _strings(MAX_RISKY_PARTS, MAX_RISKY_PART),
    "risky_total": _int(0, MAX_EXACT_INT),
}


def _approvals(field: str, v: Any) -> None:
    if type(v) is not list:
        raise _fail("wrong_type", field, "must be an array")
    if len(v) > MAX_LISTED_APPROVALS:
        raise _fail("invalid_value", field, f"at most {MAX_LISTED_APPROVALS} approvals")
    for item in v:
        _check(item, _APPROVAL_SPEC, "listed approval")


_CONTROL_REPLY_SPEC: dict[str, Check] = {
    "protocol_version": _int(PROTOCOL_VERSION, PROTOCOL_VERSION),
    "request_id": _text(_REQUEST_ID, nullable=True),
    "ok": _bool,
    "error": _text(_REASON, nullable=True),
    "message": _text(None, limit=512),
    "approvals": _approvals,
}


def check_request(obj: Any) -> Request:
    """``obj`` as a :class:`Request`, or :class:`DecodeError`.

    Beyond each field's own domain, ``hard_deadline_ms`` must fall after
    ``received_at_ms`` and at most :data:`MAX_DEADLINE_SPAN_MS` later.
    """
    req = _check(obj, _REQUEST_SPEC, "request")
    span = req["hard_deadline_ms"] - req["received_at_ms"]
    if not 0 < span <= MAX_DEADLINE_SPAN_MS:
        raise _fail("invalid_value", "hard_deadline_ms", f"must be 1..{MAX_DEADLINE_SPAN_MS} ms after received_at_ms")
    return req  # type: ignore[return-value]


def check_reply(obj: Any) -> Reply:
    """``obj`` as a :class:`Reply`, or :class:`DecodeError`.

    A ``null`` request id is allowed only in a ``protocol_error`` reply (the
    request could not be read far enough to know it).
    """
    rep = _check(obj, _REPLY_SPEC, "reply")
    if rep["request_id"] is None and rep["decision_source"] != "protocol_error":
        raise _fail("invalid_value", "request_id", "null only in a protocol_error reply")
    return rep  # type: ignore[return-value]


def check_control_reply(obj: Any) -> ControlReply:
    """``obj`` as a :class:`ControlReply`, or :class:`DecodeError`."""
    return _check(obj, _CONTROL_REPLY_SPEC, "control reply")  # type: ignore[return-value]


def make_reply(
    request_id: str | None,
    decision: Decision,
    reason: str,
    explanation: str,
    *,
    source: str,
    tool_class: str = "unknown",
    incident_id: str | None = None,
) -> Reply:
    """A reply with every field, the explanation cut to its bound."""
    if len(explanation) > MAX_EXPLANATION:
        explanation = explanation[: MAX_EXPLANATION - 1] + "…"
    return {
        "protocol_version": PROTOCOL_VERSION,
        "request_id": request_id,
        "decision": decision,
        "reason": reason,
        "explanation": explanation,
        "incident_id": incident_id,
        "decision_source": source,
        "tool_class": tool_class,
        "execution_observed": "unknown",
    }


__all__ = [
    "APPROVAL_STATES",
    "CONTROL_KINDS",
    "DECISIONS",
    "DECISION_SOURCES",
    "MAX_COMMAND_PART",
    "MAX_DEADLINE_SPAN_MS",
    "MAX_EXPLANATION",
    "MAX_LISTED_APPROVALS",
    "MAX_RISKY_PART",
    "MAX_RISKY_PARTS",
    "TOOL_CLASSES",
    "ApprovalView",
    "ControlReply",
    "Reply",
    "Request",
    "check_control_reply",
    "check_reply",
    "check_request",
    "make_reply",
]
