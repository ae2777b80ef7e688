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
"""

from __future__ import annotations

import os
import threading

import attrs

from rematch_trace.live import procs

#: Words in a command line that mark a hook wrapper, not a harness.
WRAPPER_MARKS = ("rematch-hook", "rematch_hook.py")
#: Most harnesses remembered (the oldest dead ones go first).
MAX_HARNESSES = 256


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

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: dict[tuple[int, int], Harness] = {}

    def note_client(self, client_pid: int, itself: bool = False) -> procs.Proc | None:
        """Record the harness of an event-channel client; that harness (``None`` when it has none).

        ``itself``: the client runs inside the harness (an extension, as pi's): it is the harness.
        """
        h = procs.stat(client_pid) if itself else harness_of(client_pid)
        if h is None:
            return None
        key = (h.pid, h.start)
        with self._lock:
            if key in self._known:
                return h
        record = Harness(h, procs.program(h.pid), procs.cgroup(h.pid))
        with self._lock:
            if len(self._known) >= MAX_HARNESSES:
                for k, old in list(self._known.items()):
                    if not procs.same(old.proc):
                        del self._known[k]
                while len(self._known) >= MAX_HARNESSES:
                    del self._known[next(iter(self._known))]
            self._known[key] = record
        return h

    def harnesses(self) -> list[Harness]:
        """The recorded harnesses that still run."""
        with self._lock:
            known = list(self._known.values())
        return [h for h in known if procs.same(h.proc)]

    def taint(self, pid: int) -> str | None:
        """Why process ``pid`` counts as the agent's (see the module docstring), or ``None``."""
        live = self.harnesses()
        if not live:
            return None
        keys = {(h.proc.pid, h.proc.start) for h in live}
        programs = {h.program for h in live if h.program is not None}
        sessions = {h.proc.sid for h in live if h.proc.sid > 1}
        groups = {h.proc.pgrp for h in live if h.proc.pgrp > 1}
        chain = procs.ancestry(pid)
        for i, x in enumerate(chain):
            if (x.pid, x.start) in keys:
                return f"process {x.pid} in its ancestry is the harness"
            if x.sid in sessions or x.pgrp in groups:
                return f"process {x.pid} in its ancestry is in the harness's session or process group"
            if programs and procs.program(x.pid) in programs:
                return f"process {x.pid} in its ancestry runs the harness's program (another session of it)"
            parent = chain[i + 1] if i + 1 < len(chain) else None
            reaped = parent is None or os.path.basename(procs.exe(parent.pid) or "") == "systemd"
            if reaped and any(x.start > h.proc.start for h in live):
                group = procs.cgroup(x.pid)
                if any(x.start > h.proc.start and group is not None and group == h.cgroup for h in live):
                    return (f"process {x.pid} in its ancestry was detached (re-parented to init) after the "
                            "harness started, in the harness's control group")
        return None

    def vet_approver(self, pid: int) -> Refusal | None:
        """A :class:`Refusal` (``self_approval``) when ``pid`` is tainted."""
        why = self.taint(pid)
        if why is None:
            return None
        return Refusal("self_approval", f"the approver may be the agent itself: {why}; "
                                        "approve from a terminal of your own (docs/threat-model.md)")

    def vet_terminal(self, pid: int) -> Terminal | Refusal:
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
            why = self.taint(holder)
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


__all__ = ["MAX_HARNESSES", "WRAPPER_MARKS", "Guard", "Harness", "Refusal", "Terminal", "harness_of",
           "write_code"]
