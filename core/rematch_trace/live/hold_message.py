"""What a held call's reply says, in one place: while it waits, and after its decision.

The wording of every hold message comes from :func:`hold_message`, so that when
the way a person confirms an approval changes, only this function changes. A
message after a decision reports that decision (denied by a person, expired,
cancelled) and never asks for an approval that can no longer be given.
"""

from __future__ import annotations


def approve_command(approval_id: str) -> str:
    """The exact command a person runs to let held call ``approval_id`` proceed."""
    return f"rematch approve {approval_id}"


def deny_command(approval_id: str) -> str:
    """The exact command a person runs to deny held call ``approval_id``."""
    return f"rematch deny {approval_id}"


def hold_message(approval_id: str, state: str, explanation: str, wait_s: float) -> str:
    """The text of held call ``approval_id`` in ``state`` (``pending`` or a terminal state).

    :param explanation: the rule's own explanation (why the call was held).
    :param wait_s: how long the call waits (waited) for a decision, in seconds.
    """
    why = explanation.strip()
    why = f"{why} " if why else ""
    approve = approve_command(approval_id)
    wait = f"{wait_s:.0f} s" if wait_s >= 1 else f"{wait_s * 1000:.0f} ms"
    if state == "pending":
        return (f"{why}Held for approval {approval_id}: run `{approve}` to let it run, or "
                f"`{deny_command(approval_id)}`, within {wait}.")
    if state == "approved":
        return f"Approved by a person (`{approve}`)."
    if state == "denied":
        return f"{why}Held for approval {approval_id}; denied by a person (`{deny_command(approval_id)}`)."
    if state == "expired":
        return (f"{why}Held for approval {approval_id}; no one ran `{approve}` within {wait}, so it was denied "
                "(expired). Retry the call and approve it while it waits (`rematch approvals` lists held calls).")
    if state == "cancelled":
        return (f"{why}Held for approval {approval_id}; the hold was cancelled before anyone decided "
                "(the service stopped, or the call's hook went away).")
    return f"{why}Held for approval {approval_id}; {state}."


__all__ = ["approve_command", "deny_command", "hold_message"]
