"""Is the process behind a data folder's sockets its real service, running, with the policy it started with?

A process of the person's own user can move ``run/events.sock`` aside and
answer every call ``no_override`` itself, pause the service (``SIGSTOP``) so
that the hook falls back to its own verdict, and rewrite ``run/policy`` (the
note that tells that fallback which policy the service used). What no such
process can forge without tracing the service:

* **who holds the service's lock**: the kernel lists the holder of the
  ``flock`` on ``run/serve.lock`` in ``/proc/locks`` (its pid in the file can
  be rewritten; the lock cannot be taken while the service holds it);
* **who listens on a socket**: ``SO_PEERCRED`` of a connected client names
  the process that called ``listen``; it must be that lock holder;
* **whether it runs**: its state in ``/proc/PID/stat`` (``T``: stopped);
* **the policy it loaded**: the service keeps the bytes of its policy file in
  a sealed memory file (``memfd``, no write, grow or shrink once sealed) that
  it holds open for its life; the hook reads them through
  ``/proc/PID/fd/N`` of the lock holder, not from ``run/policy``.

Linux only (``/proc``, ``SO_PEERCRED``, ``memfd_create``), as the service.
Standard library only: the hook client (``rematch_hook.py``) repeats
:func:`socket_problem` in its own few lines (it imports no package).
"""

from __future__ import annotations

import os
import socket
import struct
from pathlib import Path

#: The name of the service's sealed policy memory file (``/proc/PID/fd/N`` links to ``/memfd:<name> (deleted)``).
POLICY_MEMFD = "rematch-policy"
_MEMFD_LINK = f"/memfd:{POLICY_MEMFD} (deleted)"
_CRED = struct.Struct("3i")


def lock_holders(lock: Path) -> set[int]:
    """The pids that hold a ``flock`` on file ``lock``, as the kernel lists them in ``/proc/locks``."""
    try:
        st = os.stat(lock)
        with open("/proc/locks", "rb") as f:
            text = f.read(1 << 22)
    except OSError:
        return set()
    want = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    found: set[int] = set()
    for line in text.splitlines():
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 fe:00:2179895 0 EOF" (a blocked waiter's "->" takes field 1)
        if len(fields) < 6 or fields[1] != b"FLOCK":
            continue
        try:
            major, minor, ino = fields[5].split(b":")
            if (int(major, 16), int(minor, 16), int(ino)) == want:
                found.add(int(fields[4]))
        except ValueError:
            continue
    return found


def state(pid: int) -> str | None:
    """``pid``'s state letter (``R``, ``S``, ``T`` stopped...), ``None`` when gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    rest = raw[raw.rfind(b")") + 2:]
    return rest[:1].decode("ascii", "replace") or None


def peer_pid(sock: socket.socket) -> int:
    """The pid of the process at the other end of connected Unix socket ``sock`` (``SO_PEERCRED``)."""
    return int(_CRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size))[0])


def socket_problem(sock: socket.socket, run: Path) -> str | None:
    """Why the process ``sock`` is connected to is not the running service of ``run`` (``None``: it is).

    ``untrusted_service``: it does not hold the service's lock (a socket moved
    aside and replaced); ``service_paused``: it is the service, stopped.
    """
    pid = peer_pid(sock)
    holders = lock_holders(run / "serve.lock")
    if pid not in holders:
        owner = ",".join(map(str, sorted(holders))) or "none"
        return f"untrusted_service: the socket's process {pid} does not hold the service's lock (held by {owner})"
    if state(pid) in ("T", "t"):
        return f"service_paused: the service (pid {pid}) is stopped"
    return None


def anchor_policy(text: bytes) -> int | None:
    """A sealed memory file holding ``text`` (the service's policy file), open for this process's life; its fd."""
    if not hasattr(os, "memfd_create"):
        return None
    try:
        fd = os.memfd_create(POLICY_MEMFD, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except OSError:
        return None
    try:
        os.write(fd, text)
        import fcntl

        seals = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE  # type: ignore[attr-defined]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)  # type: ignore[attr-defined]
    except OSError:
        os.close(fd)
        return None
    return fd


def anchored_policy(pid: int) -> bytes | None:
    """The policy bytes service ``pid`` anchored (:func:`anchor_policy`), read through its ``/proc`` fd; ``None``
    when it has none (or it cannot be read)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != _MEMFD_LINK:
                continue
            with open(f"/proc/{pid}/fd/{fd}", "rb") as f:
                return f.read(1 << 20)
        except OSError:
            continue
    return None


def digest(text: bytes) -> str:
    """How a policy's bytes are named in ``run/policy``: ``sha256:<hex>``."""
    import hashlib  # (here: a hook imports this module on every call, and seldom needs a digest)

    return "sha256:" + hashlib.sha256(text).hexdigest()


def running_service(run: Path) -> int | None:
    """The pid holding the service's lock (the running service), when exactly one does."""
    holders = lock_holders(run / "serve.lock")
    return next(iter(holders)) if len(holders) == 1 else None


def problems(run: Path) -> list[str]:
    """What is wrong with the service of private folder ``run``, as ``doctor`` and ``hooks status`` say it:
    a socket some other process answers on, a stopped service, a policy note that is not what it loaded."""
    pid = running_service(run)
    if pid is None:
        return []
    out: list[str] = []
    if state(pid) in ("T", "t"):
        out.append(f"the verdict service (pid {pid}) is stopped (paused): every call waits, then is judged by the "
                   "hook alone")
    for name in ("events.sock", "control.sock"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(1.0)
        try:
            s.connect(os.fspath(run / name))
            other = peer_pid(s)
            if other != pid:
                out.append(f"run/{name} is answered by process {other}, not by the verdict service (pid {pid}): "
                           "the socket was replaced")
        except OSError as err:
            out.append(f"run/{name} does not reach the verdict service (pid {pid}): {type(err).__name__}")
        finally:
            s.close()
    anchored = anchored_policy(pid)
    try:
        noted = (run / "policy").read_text("utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        noted = []
    if anchored is None:
        out.append(f"the verdict service (pid {pid}) holds no readable copy of its policy")
    elif len(noted) < 2 or noted[1].strip() != digest(anchored):
        out.append("run/policy does not name the policy the verdict service started with (it was rewritten)")
    elif noted[0].strip():
        try:
            now = Path(noted[0].strip()).read_bytes()
        except OSError:
            now = b""
        if digest(now) != digest(anchored):
            out.append(f"the policy file {noted[0].strip()} changed since the verdict service started: the "
                       "service still applies the old one (restart it to apply the new)")
    return out


__all__ = ["POLICY_MEMFD", "anchor_policy", "anchored_policy", "digest", "lock_holders", "peer_pid", "problems",
           "running_service", "socket_problem", "state"]
