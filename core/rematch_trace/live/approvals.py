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
   ancestors include the harness that ran the held client (pid and start
   time, :attr:`Approval.harness`), or whose ancestry cannot be read whole, is
   refused (Linux ``/proc``; the service applies the fuller checks of
   :mod:`rematch_trace.live.approver_guard` against the same bound harness
   before it asks the book);
6. an approval (not a denial) that needs a one-time code names the code
   issued for this approval (:meth:`ApprovalBook.issue_code`) from the same
   terminal it was written to; a few wrong codes void it.

Then exactly one transition to ``approved`` or ``denied`` is committed; a
second decider, even one racing in another thread, finds it no longer pending
and is told ``already_decided`` with the final state (an id never held is
``unknown_approval``). Nothing of the original input is held: the summary is
the event's redacted one; the code lives in memory only, and ends with the hold.
"""

from __future__ import annotations

import hmac
import os
import secrets
import threading
import time
from collections.abc import Callable

import attrs

from rematch_trace.live import approval_text, procs
from rematch_trace.live.approval_text import LISTED_BYTES, SHOWN_BYTES
from rematch_trace.live.approver_guard import Harness
from rematch_trace.live.ipc.messages import MAX_LISTED_APPROVALS, ApprovalView

#: Terminal states.
TERMINAL = ("approved", "denied", "expired", "cancelled")
#: Wrong codes one approval takes before its code is void; codes one approval may be issued.
CODE_TRIES = 3
MAX_CODES = 3
#: The errors a decision or a code request can get, and what each means (docs/ipc-v2.md lists them).
APPROVAL_ERRORS: dict[str, str] = {
    "unknown_approval": "no approval with this id was held (or it ended long ago)",
    "already_decided": "the approval has ended; the message names its final state (`approved`, `denied`, `expired`, `cancelled`)",
    "binding_mismatch": "the fingerprint or nonce is not the held invocation's",
    "expired": "the approval's deadline passed (it is now `expired`)",
    "not_live": "the held call's client went away (the approval is now `cancelled`)",
    "self_approval": "the decider may be the agent: its ancestry reaches a harness, a harness's program, session or process group, or a process detached after a harness, or cannot be read whole (the message says which)",
    "guard_saturated": "no approval (nor code) while the table of harnesses is full of live ones and a harness seen since is not recorded; denying still works",
    "code_required": "approving needs the one-time code, given from the terminal it was written to",
    "wrong_code": "not the code; the message says how many tries are left (none: the code is void)",
    "code_exhausted": "every code this approval may be issued was issued; only a denial remains",
    "no_terminal": "the asker is not in the foreground of a terminal a person types at, or the code could not be written to it",
    "terminal_untrusted": "the asker's pseudo-terminal is driven (its master held) by a process that may be the agent",
}
#: Decided approvals whose final state is still told (``already_decided``), newest kept.
REMEMBERED = 1024


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
    #: The harness that asked (pid, start time, session, program, cgroup): the guard checks every approver
    #: of this call against it, whatever its table of harnesses holds.
    harness: Harness | None = None
    #: The call's whole redacted text (:func:`~rematch_trace.live.approval_text.held_text`; in memory only,
    #: never logged) and the characters dropped from its middle to keep it (0: whole).
    command: str = attrs.field(default="", repr=False)
    command_dropped: int = 0
    #: The call's nonce-less action fingerprint: the one its event in events/<session>.jsonl carries.
    event_fingerprint: str | None = None
    state: str = "pending"
    #: The one-time code issued (in memory only), the terminal it was written to, tries left, codes issued.
    code: str | None = attrs.field(default=None, repr=False)
    code_tty: int = 0
    code_tries: int = 0
    codes_issued: int = 0
    done: threading.Event = attrs.field(factory=threading.Event)

    def view(self, budget: int = LISTED_BYTES) -> ApprovalView:
        """The approval as the control channel lists it (``budget``: bytes of its command's head and tail;
        past it the middle is counted, and with :data:`SHOWN_BYTES`, its risky parts given)."""
        text = self.command or self.summary
        shown = approval_text.shown(text, self.command_dropped, budget, risky=budget >= SHOWN_BYTES)
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
            "command_chars": shown.chars,
            "command_head": shown.head,
            "command_tail": shown.tail,
            "command_hidden": shown.hidden,
            "risky_parts": list(shown.risky),
            "risky_total": shown.risky_total,
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
        self._decided: dict[str, str] = {}
        # The nonce-less event fingerprints of approved calls (newest kept): a harness that then
        # asks its person about the same call (Codex's PermissionRequest) is not held twice.
        self._approved_events: dict[str, None] = {}

    def hold(self, approval: Approval) -> Approval:
        """File a new pending approval; :class:`BookFull` past the limit."""
        with self._lock:
            if len(self._items) >= self.limit:
                raise BookFull(f"{self.limit} invocations are already held")
            self._items[approval.approval_id] = approval
        return approval

    def approved_call(self, event_fingerprint: str | None) -> bool:
        """Whether a held call with this (nonce-less) event fingerprint was approved (of the newest remembered)."""
        with self._lock:
            return bool(event_fingerprint) and event_fingerprint in self._approved_events

    def new_id(self) -> str:
        """A fresh approval id: 12 lowercase hex digits from the system's random source."""
        while True:
            candidate = os.urandom(6).hex()
            with self._lock:
                if candidate not in self._items:
                    return candidate

    def bound_harnesses(self) -> list[Harness]:
        """The harnesses of every held call (each approver is checked against all of them)."""
        with self._lock:
            return [a.harness for a in self._items.values() if a.harness is not None]

    def get(self, approval_id: str) -> Approval | None:
        """Held call ``approval_id`` while it is pending."""
        with self._lock:
            return self._items.get(approval_id)

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
        a.code = None
        self._items.pop(a.approval_id, None)
        self._decided[a.approval_id] = state
        if len(self._decided) > REMEMBERED:
            del self._decided[next(iter(self._decided))]
        if state == "approved" and a.event_fingerprint:
            self._approved_events[a.event_fingerprint] = None
            if len(self._approved_events) > REMEMBERED:
                del self._approved_events[next(iter(self._approved_events))]
        a.done.set()
        return True

    def _open(self, approval_id: str, fingerprint: str, nonce: str) -> Approval | Outcome:
        """Checks 1 to 4 of the module docstring, under the lock: the held approval, or why not."""
        a = self._items.get(approval_id)
        if a is None:
            final = self._decided.get(approval_id)
            if final is not None:
                return Outcome(False, "already_decided", f"approval {approval_id} is already {final}")
            return Outcome(False, "unknown_approval", f"no pending approval {approval_id}")
        if not (hmac.compare_digest(a.fingerprint, fingerprint) and hmac.compare_digest(a.nonce, nonce)):
            return Outcome(False, "binding_mismatch", "the fingerprint or nonce is not this invocation's")
        if a.state != "pending":  # unreachable while held items are pending; kept as the rule
            return Outcome(False, "already_decided", f"approval {approval_id} is already {a.state}")
        if time.monotonic() >= a.expires_at:
            self._finish_locked(a, "expired")
            return Outcome(False, "expired", "the approval's deadline has passed")
        if not a.is_live():
            self._finish_locked(a, "cancelled")
            return Outcome(False, "not_live", "the invocation is no longer waiting (its client went away)")
        return a

    def issue_code(self, approval_id: str, fingerprint: str, nonce: str, tty_nr: int) -> tuple[str | None, Outcome]:
        """A fresh one-time code for approving ``approval_id`` from terminal ``tty_nr`` (replacing any earlier one).

        The caller writes it to that terminal; it is never sent on a socket nor logged.
        """
        with self._lock:
            a = self._open(approval_id, fingerprint, nonce)
            if isinstance(a, Outcome):
                return None, a
            if a.codes_issued >= MAX_CODES:
                return None, Outcome(False, "code_exhausted", f"{MAX_CODES} codes were issued for {approval_id}; "
                                                              "only a denial remains")
            n = secrets.randbelow(10**8)
            a.code, a.code_tty, a.code_tries = f"{n // 10**4:04d}-{n % 10**4:04d}", tty_nr, CODE_TRIES
            a.codes_issued += 1
            return a.code, Outcome(True, None, "a one-time code was written to your terminal")

    def void_code(self, approval_id: str) -> None:
        """Forget the code of ``approval_id`` (it could not be shown)."""
        with self._lock:
            a = self._items.get(approval_id)
            if a is not None:
                a.code = None

    def _check_code(self, a: Approval, code: str | None, tty_nr: int | None) -> Outcome | None:
        if a.code is None:
            why = "no code was issued" if a.codes_issued == 0 else "its code is used up"
            return Outcome(False, "code_required", f"approving {a.approval_id} needs the one-time code a person "
                                                   f"reads on their terminal ({why}): run rematch approve "
                                                   f"{a.approval_id} in an interactive terminal (or accept the "
                                                   "risk with approve_without_code: true in the policy; "
                                                   "docs/threat-model.md)")
        if code is None or tty_nr != a.code_tty:
            return Outcome(False, "code_required", "approve from the terminal the one-time code was written to, "
                                                   "with that code")
        if hmac.compare_digest(a.code.encode(), code.strip().encode()):
            return None
        a.code_tries -= 1
        if a.code_tries <= 0:
            a.code = None
            return Outcome(False, "wrong_code", "wrong code; that code is void now (ask for a new one)")
        return Outcome(False, "wrong_code", f"wrong code; {a.code_tries} tries left")

    def wait(self, a: Approval, poll_s: float = 0.1) -> str:
        """Block until ``a`` is decided, expires, or its client goes away; its terminal state."""
        while not a.done.wait(min(poll_s, max(0.0, a.expires_at - time.monotonic()))):
            if time.monotonic() >= a.expires_at:
                self._finish(a, "expired")
            elif not a.is_live():
                self._finish(a, "cancelled")
        return a.state

    def decide(self, approval_id: str, fingerprint: str, nonce: str, approve: bool,
               approver_pid: int | None = None, *, need_code: bool = False, code: str | None = None,
               tty_nr: int | None = None) -> Outcome:
        """Approve or deny one held invocation, after every check of the module docstring.

        ``need_code``: approving needs ``code``, the one issued for this
        approval, given from terminal ``tty_nr`` (the one it was written to).
        """
        with self._lock:
            a = self._open(approval_id, fingerprint, nonce)
            if isinstance(a, Outcome):
                return a
            if approver_pid is not None and (a.harness_pid is not None or a.harness is not None):
                chain = procs.lineage(approver_pid)
                if chain is None:
                    return Outcome(False, "self_approval", "the approver's ancestry cannot be read whole")
                own = {(a.harness.proc.pid, a.harness.proc.start)} if a.harness is not None else set()
                if any((x.pid, x.start) in own or x.pid == a.harness_pid for x in chain):
                    return Outcome(False, "self_approval", "the approver runs inside the harness whose call is held")
            if approve and need_code:
                refused = self._check_code(a, code, tty_nr)
                if refused is not None:
                    return refused
            self._finish_locked(a, "approved" if approve else "denied")
            return Outcome(True, None, f"{approval_id} {a.state}")

    def cancel_all(self) -> int:
        """Cancel every held approval (the service is stopping); how many were."""
        with self._lock:
            items = list(self._items.values())
            return sum(self._finish_locked(a, "cancelled") for a in items)


__all__ = ["APPROVAL_ERRORS", "CODE_TRIES", "MAX_CODES", "REMEMBERED", "TERMINAL", "Approval", "ApprovalBook", "BookFull", "Outcome", "ancestors", "parent_of"]
