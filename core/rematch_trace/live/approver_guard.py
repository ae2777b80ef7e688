"""Who may approve a held call: refusing approvers the agent could have started (docs/threat-model.md).

The service learns the **harnesses** (the processes that run hooks, Claude
Code say) from the clients that connect to its event channel: a hook client's
parent, past any wrapper that runs ``rematch-hook`` or ``rematch_hook.py``, is
its harness. A harness is recorded with its start time (so a reused pid is not
taken for it), its session, process group, program and control group.

A process is **tainted** when it, or any of its ancestors:

1. is a recorded harness (pid and start time);
2. runs the same program as a recorded harness (another session of it);
3. is in a recorded harness's session or process group (``nohup``,
   ``disown`` and a double fork leave the parent's tree but keep both);
4. was detached after a harness started, in that harness's control group:
   its parent is init (or the user's ``systemd``, the usual subreaper), it
   started after the harness, and it shares the harness's cgroup (a double
   fork, ``setsid -f``: the agent's own tree, re-parented).

An approver must not be tainted. One that asks for a **one-time code** must
also sit in the foreground of a controlling terminal that a person types at:
a pseudo-terminal whose master is held by no tainted process (``script``,
``expect`` or a pty the agent opened itself fail here), or a virtual console.
The code is written to that terminal by the service, never sent back on the
socket: a process that cannot read the terminal's screen does not learn it.

**Nothing is forgotten to make room.** A held call is bound to the harness
that asked (its :class:`Harness`, kept with the approval), and every check of
an approver or of a terminal's master is made against that harness and every
other held call's, besides the table. The table itself never drops a harness
that still runs: when it is full of live ones a newcomer is not recorded but
counted as unrecorded, and while any unrecorded harness may still run (or more
went unrecorded than can be remembered) no approval and no code is given
(``guard_saturated``): an agent that floods the table with fake harnesses gets
its approvals refused, never its real harness forgotten. An approver whose
whole ancestry cannot be read (a parent exiting mid-read, a chain nested past
:data:`~rematch_trace.live.procs.LINEAGE_LIMIT`) is refused too.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence

import attrs

from rematch_trace.live import procs

#: Words in a command line that mark a hook wrapper, not a harness.
WRAPPER_MARKS = ("rematch-hook", "rematch_hook.py")
#: Most harnesses recorded at once; a live one is never dropped for a newcomer (dead ones go first).
MAX_HARNESSES = 1024
#: Most harnesses remembered as seen but unrecorded (the table was full of live ones): their pid and
#: start time only. Past it the guard is blind for good (until the service restarts) and refuses approvals.
MAX_UNRECORDED = 4096


@attrs.frozen
class Harness:
    """A process that runs hooks, as first seen."""

    proc: procs.Proc
    program: tuple[str, str] | None
    cgroup: bytes | None


@attrs.frozen
class Terminal:
    """The controlling terminal of an approver that passed :meth:`Guard.vet_terminal`."""

    tty_nr: int
    path: str


@attrs.frozen
class Refusal:
    """Why a process may not decide: an error code of the control channel and a sentence."""

    error: str
    message: str


def _is_wrapper(pid: int) -> bool:
    return any(mark in arg for arg in procs.cmdline(pid)[:8] for mark in WRAPPER_MARKS)


def harness_of(client_pid: int) -> procs.Proc | None:
    """The harness of hook client ``client_pid``: its parent, past hook wrappers (``None``: init's child)."""
    p = procs.stat(client_pid)
    for _ in range(6):  # a wrapper or two (sh -c, then bin/rematch-hook), never a long chain
        if p is None or p.ppid <= 1:
            return None
        p = procs.stat(p.ppid)
        if p is not None and not _is_wrapper(p.pid):
            return p
    return None


class Guard:
    """The harnesses one service has seen, and the checks of the module docstring (thread-safe)."""

    def __init__(self, max_harnesses: int = MAX_HARNESSES, max_unrecorded: int = MAX_UNRECORDED) -> None:
        self.max_harnesses = max_harnesses
        self.max_unrecorded = max_unrecorded
        self._lock = threading.Lock()
        self._known: dict[tuple[int, int], Harness] = {}
        self._unrecorded: dict[tuple[int, int], procs.Proc] = {}
        self._blind = False

    @staticmethod
    def record(p: procs.Proc) -> Harness:
        """The :class:`Harness` record of process ``p`` (its program and control group read now)."""
        return Harness(p, procs.program(p.pid), procs.cgroup(p.pid))

    def note_client(self, client_pid: int, itself: bool = False) -> Harness | None:
        """Record the harness of an event-channel client; that harness (``None`` when it has none).

        ``itself``: the client runs inside the harness (an extension, as pi's): it is the harness.
        The record is returned even when the table had no room for it (it is then counted as
        unrecorded, and approvals are refused while it runs): a held call keeps it as its own.
        """
        h = procs.stat(client_pid) if itself else harness_of(client_pid)
        if h is None:
            return None
        key = (h.pid, h.start)
        with self._lock:
            known = self._known.get(key)
        if known is not None:
            return known
        record = self.record(h)
        with self._lock:
            if key in self._known:
                return self._known[key]
            if len(self._known) >= self.max_harnesses:
                for k, old in list(self._known.items()):
                    if not procs.same(old.proc):
                        del self._known[k]
            if len(self._known) < self.max_harnesses:
                self._known[key] = record
                self._unrecorded.pop(key, None)
            elif key not in self._unrecorded:
                # Full of live harnesses: a live one is never forgotten; this one is remembered by its
                # pid and start only, and approvals wait until it ends (or the guard is blind for good).
                for k, p in list(self._unrecorded.items()):
                    if not procs.same(p):
                        del self._unrecorded[k]
                if len(self._unrecorded) < self.max_unrecorded:
                    self._unrecorded[key] = h
                else:
                    self._blind = True
        return record

    def harnesses(self) -> list[Harness]:
        """The recorded harnesses that still run."""
        with self._lock:
            known = list(self._known.values())
        return [h for h in known if procs.same(h.proc)]

    def saturated(self) -> str | None:
        """Why the table cannot vouch for every harness (one seen but not recorded still runs), or ``None``."""
        with self._lock:
            if self._blind:
                return (f"more than {self.max_harnesses + self.max_unrecorded} harnesses sent hooks while "
                        "the table was full; restart the service (rematch serve) to approve again")
            waiting = list(self._unrecorded.items())
        for key, p in waiting:
            if procs.same(p):
                return (f"{self.max_harnesses} live harnesses fill the table and process {p.pid}, a harness "
                        "seen since, is not recorded")
            with self._lock:
                self._unrecorded.pop(key, None)
        return None

    def taint(self, pid: int, bound: Iterable[Harness] = ()) -> str | None:
        """Why process ``pid`` counts as the agent's (see the module docstring), or ``None``.

        ``bound``: harnesses checked besides the table's (the held calls' own), when they still run.
        """
        live = {(h.proc.pid, h.proc.start): h for h in self.harnesses()}
        for h in bound:
            if procs.same(h.proc):
                live.setdefault((h.proc.pid, h.proc.start), h)
        chain = procs.lineage(pid)
        if chain is None:
            return f"the ancestry of process {pid} cannot be read whole"
        if not live:
            return None
        harnesses = list(live.values())
        programs = {h.program for h in harnesses if h.program is not None}
        sessions = {h.proc.sid for h in harnesses if h.proc.sid > 1}
        groups = {h.proc.pgrp for h in harnesses if h.proc.pgrp > 1}
        for i, x in enumerate(chain):
            if (x.pid, x.start) in live:
                return f"process {x.pid} in its ancestry is the harness"
            if x.sid in sessions or x.pgrp in groups:
                return f"process {x.pid} in its ancestry is in the harness's session or process group"
            if programs and procs.program(x.pid) in programs:
                return f"process {x.pid} in its ancestry runs the harness's program (another session of it)"
            parent = chain[i + 1] if i + 1 < len(chain) else None
            reaped = parent is None or os.path.basename(procs.exe(parent.pid) or "") == "systemd"
            if reaped and any(x.start > h.proc.start for h in harnesses):
                group = procs.cgroup(x.pid)
                if any(x.start > h.proc.start and group is not None and group == h.cgroup for h in harnesses):
                    return (f"process {x.pid} in its ancestry was detached (re-parented to init) after the "
                            "harness started, in the harness's control group")
        return None

    def vet_approver(self, pid: int, bound: Sequence[Harness] = (), *, approving: bool = True) -> Refusal | None:
        """A :class:`Refusal` when ``pid`` is tainted (``self_approval``), or, to approve, the table is saturated.

        ``bound``: the held calls' own harnesses, checked whatever the table holds.
        """
        if approving:
            full = self.saturated()
            if full is not None:
                return Refusal("guard_saturated", f"no approval while the harness table cannot vouch for every "
                                                  f"harness: {full} (docs/threat-model.md)")
        why = self.taint(pid, bound)
        if why is None:
            return None
        return Refusal("self_approval", f"the approver may be the agent itself: {why}; "
                                        "approve from a terminal of your own (docs/threat-model.md)")

    def vet_terminal(self, pid: int, bound: Sequence[Harness] = ()) -> Terminal | Refusal:
        """``pid``'s controlling terminal when a person can be at it, else a :class:`Refusal`."""
        p = procs.stat(pid)
        if p is None or p.tty_nr == 0:
            return Refusal("no_terminal", "the approver has no controlling terminal: run it in an interactive "
                                          "terminal")
        if p.tpgid != p.pgrp:
            return Refusal("no_terminal", "the approver is not in the foreground of its terminal")
        index = procs.pty_index(p.tty_nr)
        if index is None:
            if os.major(p.tty_nr) == procs.VT_MAJOR:
                return Terminal(p.tty_nr, f"/dev/tty{os.minor(p.tty_nr)}")
            return Refusal("no_terminal", "the approver's terminal is neither a pseudo-terminal nor a console")
        for holder in procs.pty_masters(index):
            why = self.taint(holder, bound)
            if why is not None:
                return Refusal("terminal_untrusted", f"the approver's terminal /dev/pts/{index} is driven by "
                                                     f"process {holder}, which may be the agent: {why}")
        return Terminal(p.tty_nr, f"/dev/pts/{index}")


def write_code(term: Terminal, text: str) -> bool:
    """Write ``text`` to terminal ``term`` (checked to be that very device); whether it was written."""
    try:
        fd = os.open(term.path, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        if os.fstat(fd).st_rdev != term.tty_nr:
            return False
        data = text.encode()
        return os.write(fd, data) == len(data)
    except OSError:
        return False
    finally:
        os.close(fd)


__all__ = ["MAX_HARNESSES", "MAX_UNRECORDED", "WRAPPER_MARKS", "Guard", "Harness", "Refusal", "Terminal", "harness_of",
           "write_code"]
