"""Facts about processes, read from Linux ``/proc``: what the approval guard judges a process by.

Every reader here returns ``None`` (or an empty answer) when the process is
gone or is not readable (another user's): the guard treats a fact it cannot
read as no evidence, and the facts it acts on (ancestry, session, cgroup,
terminal) are readable for every process of the service's own user.
"""

from __future__ import annotations

import os

import attrs

#: Major device numbers of Unix98 pseudo-terminal slaves (``/dev/pts/N``), and of virtual consoles.
PTS_MAJORS = range(136, 144)
VT_MAJOR = 4


@attrs.frozen
class Proc:
    """One process as ``/proc/PID/stat`` describes it (``start``: clock ticks after boot)."""

    pid: int
    ppid: int
    pgrp: int
    sid: int
    tty_nr: int
    tpgid: int
    start: int


def stat(pid: int) -> Proc | None:
    """``pid``'s :class:`Proc`, or ``None`` when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    # The command name is in parentheses and may hold anything: parse after the last ')'.
    fields = raw[raw.rfind(b")") + 2:].split()
    try:
        # state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime
        # cstime priority nice num_threads itrealvalue starttime
        return Proc(pid, int(fields[1]), int(fields[2]), int(fields[3]), int(fields[4]), int(fields[5]),
                    int(fields[19]))
    except (IndexError, ValueError):
        return None


def same(p: Proc) -> bool:
    """Whether the process ``p`` describes still runs (its pid was not reused since)."""
    now = stat(p.pid)
    return now is not None and now.start == p.start


def ancestry(pid: int, limit: int = 64) -> list[Proc]:
    """``pid`` itself, then its parent, grandparent... up to (not including) pid 1; empty when it is gone."""
    out: list[Proc] = []
    while pid > 1 and len(out) < limit:
        p = stat(pid)
        if p is None:
            break
        out.append(p)
        pid = p.ppid
    return out


#: Most processes in one ancestry: past it the ancestry is not proven (a chain nested deeper than this).
LINEAGE_LIMIT = 4096


def lineage(pid: int, limit: int = LINEAGE_LIMIT, tries: int = 3) -> list[Proc] | None:
    """``pid`` itself, then every ancestor up to (not including) init; ``None`` when that cannot be proven.

    Unlike :func:`ancestry`, a chain cut short is not taken for a whole one: a
    parent that exits (or whose pid is reused, seen by a start time after its
    child's) while the chain is read makes it read again, ``tries`` times; a
    chain deeper than ``limit`` (an agent nesting shells past the bound) or a
    process that cannot be read is ``None``. The guard refuses what it cannot
    prove, so an approver judged by a partial ancestry is never approved.
    """
    for _ in range(tries):
        chain: list[Proc] = []
        p = stat(pid)
        if p is None:
            return None
        while len(chain) < limit:
            chain.append(p)
            if p.ppid <= 1:  # init's child (or a namespace's first process): the chain is whole
                return chain
            parent = stat(p.ppid)
            if parent is None or parent.start > p.start:
                break  # the parent went (or its pid was reused) while we read: read the whole chain again
            p = parent
        else:
            return None
        p_now = stat(pid)
        if p_now is None or p_now.start != chain[0].start:
            return None
    return None


def cmdline(pid: int) -> list[str]:
    """``pid``'s arguments (empty when unreadable)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read(1 << 16)
    except OSError:
        return []
    return [a.decode("utf-8", "surrogateescape") for a in raw.split(b"\0")[:-1]] if raw else []


def exe(pid: int) -> str | None:
    """The executable file ``pid`` runs (``None`` when unreadable)."""
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def program(pid: int) -> tuple[str, str] | None:
    """What ``pid`` runs: its executable, and the first argument naming an existing file (its script, or "").

    ``node /x/cli.js`` and ``python /x/harness.py`` are told apart from other
    programs of the same interpreter; a free-text argument (a prompt) is not
    part of the identity, so two sessions of one harness have the same one.
    """
    path = exe(pid)
    if path is None:
        return None
    cwd = ""
    for arg in cmdline(pid)[1:]:
        if arg.startswith("-") or not arg:
            continue
        if not os.path.isabs(arg):
            if not cwd:
                try:
                    cwd = os.readlink(f"/proc/{pid}/cwd")
                except OSError:
                    break
            arg = os.path.join(cwd, arg)
        if os.path.isfile(arg):
            return path, os.path.realpath(arg)
    return path, ""


def cgroup(pid: int) -> bytes | None:
    """``pid``'s control groups, as ``/proc/PID/cgroup`` lists them."""
    try:
        with open(f"/proc/{pid}/cgroup", "rb") as f:
            return f.read(1 << 14)
    except OSError:
        return None


def pty_index(tty_nr: int) -> int | None:
    """The ``/dev/pts`` number of controlling terminal ``tty_nr`` (``None``: not a pseudo-terminal)."""
    if tty_nr == 0 or os.major(tty_nr) not in PTS_MAJORS:
        return None
    return (os.major(tty_nr) - PTS_MAJORS.start) * 256 + os.minor(tty_nr)


def pty_masters(index: int) -> list[int]:
    """The processes holding the master side of ``/dev/pts/<index>`` (those of other users are not seen).

    A master is an open ``/dev/ptmx``; its ``fdinfo`` names the slave it drives (``tty-index``).
    """
    holders: list[int] = []
    want = f"tty-index:\t{index}\n".encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{name}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{name}/fd/{fd}") not in ("/dev/ptmx", "/dev/pts/ptmx"):
                    continue
                with open(f"/proc/{name}/fdinfo/{fd}", "rb") as f:
                    if want in f.read(4096):
                        holders.append(int(name))
                        break
            except OSError:
                continue
    return holders


__all__ = ["LINEAGE_LIMIT", "PTS_MAJORS", "VT_MAJOR", "Proc", "ancestry", "cgroup", "cmdline", "exe", "lineage",
           "program", "pty_index", "pty_masters", "same", "stat"]
