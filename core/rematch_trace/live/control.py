"""The control channel's client: list held calls, approve or deny one.

Approvals travel only on ``control.sock``, a socket apart from the event
channel with its own peer check (:mod:`rematch_trace.live.service`). Deciding
sends the exact binding the approver was shown (approval id, fingerprint and
invocation nonce): the service refuses the decision if any of them is not the
held invocation's.
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


def decide(data: Path, approval_id: str, approve: bool) -> str:
    """Approve or deny held call ``approval_id`` (found in the list for its binding); the service's message."""
    for a in list_approvals(data):
        if a["approval_id"] == approval_id:
            break
    else:
        raise ControlError(f"no pending approval {approval_id}")
    reply = _ask(data, "decide_approval", {
        "approval_id": a["approval_id"],
        "action_fingerprint": a["action_fingerprint"],
        "invocation_nonce": a["invocation_nonce"],
        "decision": "approve" if approve else "deny",
    })
    if not reply["ok"]:
        raise ControlError(f"{reply['error']}: {reply['message']}")
    return reply["message"]


__all__ = ["ControlError", "decide", "list_approvals"]
