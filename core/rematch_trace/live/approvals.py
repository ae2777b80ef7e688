"""Invocations held for a human decision, and the one terminal transition each gets.

When a verdict is ``hold``, the service files an :class:`Approval` bound to the
exact invocation (the nonce-bearing action fingerprint and the invocation
nonce) and keeps the client waiting. :meth:`ApprovalBook.decide` changes its
state only after checking, in this order and under one lock:

1. the approval exists and the caller names its exact binding (fingerprint and nonce);
2. it is still ``pending``;
3. its deadline has not passed (else it becomes ``expired``);
4. the invocation is still live: its client is still connected and waiting
   (else it becomes ``cancelled``);
5. the approver is not the held invocation's own harness: a process whose
   ancestors include the process that ran the held client is refused
   (Linux ``/proc``; an agent cannot approve its own call through a shell).

Then exactly one transition to ``approved`` or ``denied`` is committed; a
second decider, even one racing in another thread, finds it no longer pending.
Nothing of the original input is held: the summary is the event's redacted one.
"""

from __future__ import annotations

import hmac
import os
import threading
import time
from collections.abc import Callable

import attrs

from rematch_trace.live.ipc.messages import MAX_LISTED_APPROVALS, ApprovalView

#: Terminal states.
TERMINAL = ("approved", "denied", "expired", "cancelled")


@attrs.define(eq=False)
class Approval:
    """One held invocation (mutable only through its :class:`ApprovalBook`)."""

    approval_id: str
    fingerprint: str
    nonce: str
    request_id: str
    adapter: str
    session: str
    agent_sub_id: str | None
    tool_name: str
    tool_class: str
    summary: str
    risk_features: list[str]
    rule: str
    expires_at: float
    is_live: Callable[[], bool]
    harness_pid: int | None = None
    #: The call's nonce-less action fingerprint: the one its event in events/<session>.jsonl carries.
    event_fingerprint: str | None = None
    state: str = "pending"
    done: threading.Event = attrs.field(factory=threading.Event)

    def view(self) -> ApprovalView:
        """The approval as the control channel lists it."""
        return {
            "approval_id": self.approval_id,
            "state": self.state,
            "adapter": self.adapter,
            "session": self.session[:256],
            "agent_sub_id": None if self.agent_sub_id is None else self.agent_sub_id[:256],
            "tool_name": self.tool_name[:256],
            "tool_class": self.tool_class,
            "summary": self.summary[:256],
            "risk_features": self.risk_features[:16],
            "rule": self.rule,
            "action_fingerprint": self.fingerprint,
            "invocation_nonce": self.nonce,
            "event_fingerprint": self.event_fingerprint,
            "expires_in_ms": max(0, int((self.expires_at - time.monotonic()) * 1000)),
        }


class BookFull(Exception):
    """As many invocations are held as the book allows."""


@attrs.frozen
class Outcome:
    """What :meth:`ApprovalBook.decide` did: ``ok``, else an error code and why."""

    ok: bool
    error: str | None
    message: str


def ancestors(pid: int, limit: int = 64) -> list[int]:
    """``pid``'s parent, grandparent... up to init, from ``/proc`` (empty where there is none)."""
    out: list[int] = []
    while pid > 1 and len(out) < limit:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            break
        # The command name is in parentheses and may hold anything: parse after the last ')'.
        fields = stat[stat.rfind(b")") + 2:].split()
        try:
            pid = int(fields[1])
        except (IndexError, ValueError):
            break
        out.append(pid)
    return out


def parent_of(pid: int) -> int | None:
    """``pid``'s parent process, when ``/proc`` says."""
    chain = ancestors(pid, 1)
    return chain[0] if chain else None


class ApprovalBook:
    """The pending approvals of one service (thread-safe)."""

    def __init__(self, limit: int = MAX_LISTED_APPROVALS) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._items: dict[str, Approval] = {}

    def hold(self, approval: Approval) -> Approval:
        """File a new pending approval; :class:`BookFull` past the limit."""
        with self._lock:
            if len(self._items) >= self.limit:
                raise BookFull(f"{self.limit} invocations are already held")
            self._items[approval.approval_id] = approval
        return approval

    def new_id(self) -> str:
        """A fresh approval id: 12 lowercase hex digits from the system's random source."""
        while True:
            candidate = os.urandom(6).hex()
            with self._lock:
                if candidate not in self._items:
                    return candidate

    def pending(self) -> list[Approval]:
        """Held approvals, oldest deadline first."""
        with self._lock:
            return sorted(self._items.values(), key=lambda a: a.expires_at)

    def _finish(self, a: Approval, state: str) -> bool:
        """The one terminal transition of ``a``; ``False`` when it already had one."""
        with self._lock:
            return self._finish_locked(a, state)

    def _finish_locked(self, a: Approval, state: str) -> bool:
        if a.state != "pending":
            return False
        a.state = state
        self._items.pop(a.approval_id, None)
        a.done.set()
        return True

    def wait(self, a: Approval, poll_s: float = 0.1) -> str:
        """Block until ``a`` is decided, expires, or its client goes away; its terminal state."""
        while not a.done.wait(min(poll_s, max(0.0, a.expires_at - time.monotonic()))):
            if time.monotonic() >= a.expires_at:
                self._finish(a, "expired")
            elif not a.is_live():
                self._finish(a, "cancelled")
        return a.state

    def decide(self, approval_id: str, fingerprint: str, nonce: str, approve: bool,
               approver_pid: int | None = None) -> Outcome:
        """Approve or deny one held invocation, after every check of the module docstring."""
        with self._lock:
            a = self._items.get(approval_id)
            if a is None:
                return Outcome(False, "unknown_approval", f"no pending approval {approval_id}")
            if not (hmac.compare_digest(a.fingerprint, fingerprint) and hmac.compare_digest(a.nonce, nonce)):
                return Outcome(False, "binding_mismatch", "the fingerprint or nonce is not this invocation's")
            if a.state != "pending":  # unreachable while held items are pending; kept as the rule
                return Outcome(False, "not_pending", f"already {a.state}")
            if time.monotonic() >= a.expires_at:
                self._finish_locked(a, "expired")
                return Outcome(False, "expired", "the approval's deadline has passed")
            if not a.is_live():
                self._finish_locked(a, "cancelled")
                return Outcome(False, "not_live", "the invocation is no longer waiting (its client went away)")
            if approver_pid is not None and a.harness_pid is not None and a.harness_pid in (
                approver_pid, *ancestors(approver_pid)
            ):
                return Outcome(False, "self_approval", "the approver runs inside the harness whose call is held")
            self._finish_locked(a, "approved" if approve else "denied")
            return Outcome(True, None, f"{approval_id} {a.state}")

    def cancel_all(self) -> int:
        """Cancel every held approval (the service is stopping); how many were."""
        with self._lock:
            items = list(self._items.values())
            return sum(self._finish_locked(a, "cancelled") for a in items)


__all__ = ["TERMINAL", "Approval", "ApprovalBook", "BookFull", "Outcome", "ancestors", "parent_of"]
