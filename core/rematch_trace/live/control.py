"""The control channel's client: list held calls, approve or deny one.

Approvals travel only on ``control.sock``, a socket apart from the event
channel with its own peer check (:mod:`rematch_trace.live.service`). Deciding
sends the exact binding the approver was shown (approval id, fingerprint and
invocation nonce): the service refuses the decision if any of them is not the
held invocation's. Approving needs, unless the policy opts out, the one-time
code that :func:`request_code` has the service write to the approver's own
terminal (docs/threat-model.md).
"""

from __future__ import annotations

import time
from pathlib import Path

from rematch_trace.live import paths
from rematch_trace.live.client import ExchangeFailed, exchange, new_request
from rematch_trace.live.ipc.codec import DecodeError
from rematch_trace.live.ipc.messages import ApprovalView, ControlReply, check_control_reply

#: Seconds a control request may take.
CONTROL_DEADLINE_S = 3.0


class ControlError(Exception):
    """The control channel could not be used, or refused the request; the message says why."""


class Refused(ControlError):
    """The service refused the request; ``error`` is its error code."""

    def __init__(self, error: str | None, message: str) -> None:
        super().__init__(f"{error}: {message}")
        self.error = error


#: The binding sent for an approval that is not listed (any more): the service then says only whether
#: it was decided (``already_decided``, with its final state) or never held (``unknown_approval``).
_NO_FP, _NO_NONCE = "0" * 64, "0" * 32


def _ask(data: Path, kind: str, payload: dict[str, str]) -> ControlReply:
    request = new_request(kind, dict(payload), adapter="rematch_cli", adapter_version="2",
                          host_version="rematch", deadline_ms=int(CONTROL_DEADLINE_S * 1000))
    try:
        value = exchange(paths.control_socket(data), dict(request), time.monotonic() + CONTROL_DEADLINE_S,
                         data=data, start=False)
        reply = check_control_reply(value)
    except ExchangeFailed as err:
        cause = str(err)
        if cause.startswith("no_service"):
            raise ControlError(f"no live service for {data} (start one with rematch serve)") from None
        raise ControlError(f"the control channel failed: {cause}") from None
    except DecodeError as err:
        raise ControlError(f"the control channel answered garbage: {err}") from None
    if reply["request_id"] != request["request_id"]:
        raise ControlError("the control channel answered another request")
    return reply


def list_approvals(data: Path) -> list[ApprovalView]:
    """The calls held for an approval, oldest deadline first."""
    reply = _ask(data, "list_approvals", {})
    if not reply["ok"]:
        raise ControlError(f"{reply['error']}: {reply['message']}")
    return reply["approvals"]


def show(data: Path, approval_id: str) -> ApprovalView | None:
    """Held call ``approval_id`` with as much of its command as one reply carries; ``None`` when not pending."""
    reply = _ask(data, "show_approval", {"approval_id": approval_id})
    if not reply["ok"]:
        if reply["error"] == "unknown_approval":
            return None
        raise ControlError(f"{reply['error']}: {reply['message']}")
    return next((a for a in reply["approvals"] if a["approval_id"] == approval_id), None)


def find(data: Path, approval_id: str) -> ApprovalView | None:
    """Held call ``approval_id`` as listed, or ``None`` when it is not pending."""
    return next((a for a in list_approvals(data) if a["approval_id"] == approval_id), None)


def _binding(data: Path, approval_id: str) -> dict[str, str]:
    a = find(data, approval_id)
    return {"approval_id": approval_id,
            "action_fingerprint": a["action_fingerprint"] if a else _NO_FP,
            "invocation_nonce": a["invocation_nonce"] if a else _NO_NONCE}


def request_code(data: Path, approval_id: str) -> str:
    """Have the service write a one-time code for ``approval_id`` to this process's terminal; its message.

    :raises Refused: the service would not (this process is not at a terminal a person can read, say).
    """
    reply = _ask(data, "request_code", _binding(data, approval_id))
    if not reply["ok"]:
        raise Refused(reply["error"], reply["message"])
    return reply["message"]


def decide(data: Path, approval_id: str, approve: bool, code: str | None = None) -> str:
    """Approve or deny held call ``approval_id`` (found in the list for its binding); the service's message.

    :raises Refused: the service refused it (``error`` says why: ``already_decided``, ``code_required``...).
    """
    payload = {**_binding(data, approval_id), "decision": "approve" if approve else "deny"}
    if code is not None:
        payload["code"] = code
    reply = _ask(data, "decide_approval", payload)
    if not reply["ok"]:
        raise Refused(reply["error"], reply["message"])
    return reply["message"]


__all__ = ["ControlError", "Refused", "decide", "find", "list_approvals", "request_code", "show"]
