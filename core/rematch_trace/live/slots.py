"""The connections one channel of the service holds at once, and which one gives way to a newcomer.

Issue 29: 32 idle keep-alive connections made every verdict ``busy``. Here
a connection holds its slot only while it does something: a connection with
no request in flight (idle between requests, not yet sent a whole frame, or
trickling a frame in byte by byte) is closed to make room for a new one, the
longest idle first (keep-alive connections that were already answered before
those that never sent a request). Only requests in flight (read whole, not
yet answered) can fill the channel, and each peer process may hold at most a
share of it, so no number of idle, slow or greedy clients starves the others.
Each channel (events, control) has its own table.
"""

from __future__ import annotations

import array
import fcntl
import socket
import termios
import threading
import time


class Conn:
    """One admitted connection's slot."""

    __slots__ = ("conn", "in_flight", "pid", "reclaimed", "served", "since")

    def __init__(self, conn: socket.socket, pid: int) -> None:
        self.conn = conn
        self.pid = pid
        #: Monotonic time since when the connection has had no request in flight.
        self.since = time.monotonic()
        self.in_flight = False
        #: Requests answered on it so far (a kept-alive connection has at least one).
        self.served = 0
        self.reclaimed = False


def _waiting_bytes(conn: socket.socket) -> int:
    """Bytes the client sent that the service has not read yet (``FIONREAD``); 1 when unknown."""
    buf = array.array("i", [0])
    try:
        fcntl.ioctl(conn.fileno(), termios.FIONREAD, buf, True)
    except (OSError, ValueError):
        return 1
    return buf[0]


class Slots:
    """The slot table of one channel: at most ``total`` connections, ``per_peer`` of them from one process."""

    def __init__(self, total: int, per_peer: int) -> None:
        self.total = total
        self.per_peer = max(1, min(per_peer, total))
        self._conns: dict[int, Conn] = {}
        self._lock = threading.Lock()
        #: Connections closed to make room (for the log and the tests).
        self.reclaimed = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._conns)

    def admit(self, conn: socket.socket, pid: int) -> Conn | None:
        """A slot for ``conn`` of process ``pid``, making room if needed; ``None`` when every slot is busy."""
        with self._lock:
            mine = [c for c in self._conns.values() if c.pid == pid]
            if len(mine) >= self.per_peer and not self._reclaim(mine):
                return None
            if len(self._conns) >= self.total and not self._reclaim(list(self._conns.values())):
                return None
            slot = Conn(conn, pid)
            self._conns[id(slot)] = slot
            return slot

    def _reclaim(self, among: list[Conn]) -> bool:
        # Answered keep-alive connections first, then the rest; the longest idle of each first.
        for c in sorted((c for c in among if not c.in_flight), key=lambda c: (c.served == 0, c.since)):
            # Bytes waiting to be read are a request arriving: not idle, whatever its owner thread is doing.
            if _waiting_bytes(c.conn) > 0:
                continue
            c.reclaimed = True
            del self._conns[id(c)]
            self.reclaimed += 1
            try:
                c.conn.shutdown(socket.SHUT_RDWR)  # wakes its thread, which closes it (never closed from here)
            except OSError:
                pass
            return True
        return False

    def begin(self, slot: Conn) -> bool:
        """A whole request was read on ``slot``: it is in flight. ``False`` when the slot was taken back first."""
        with self._lock:
            if slot.reclaimed:
                return False
            slot.in_flight = True
            return True

    def end(self, slot: Conn) -> None:
        """``slot``'s reply left: it is idle again from now."""
        with self._lock:
            slot.in_flight = False
            slot.served += 1
            slot.since = time.monotonic()

    def leave(self, slot: Conn) -> None:
        """``slot``'s connection is over."""
        with self._lock:
            self._conns.pop(id(slot), None)


__all__ = ["Conn", "Slots"]
