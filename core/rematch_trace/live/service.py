"""The resident live service (``rematch serve``): two Unix sockets, a registry of handlers.

**Channels.** ``events.sock`` takes v2 requests from adapters; each request's
``request_kind`` selects a handler from the registry (:meth:`Service.register_handler`).
``pre_tool_use`` is registered here: it builds the call's normalized event,
asks the analysis provider, and may hold the call for an approval.
``control.sock`` is a separate channel with its own registry
(``list_approvals``, ``request_code``, ``decide_approval``): approvals are
never accepted on the event channel, and an event handler cannot be registered
for a control kind. Every event-channel client's harness is recorded
(:mod:`rematch_trace.live.approver_guard`): a decider inside any of them is refused.
Both sockets are 0600 in a private 0700 folder (:mod:`rematch_trace.live.paths`),
and every connection's peer uid is read with ``SO_PEERCRED``: another user's
process is refused before a byte is read.

**Requests.** One request per frame; a connection may send several in turn,
idling up to 5 s between them. A frame must arrive whole within the read
deadline (1 s) and a reply leave
within the reply deadline (1 s). A fault in a frame is answered with a
``protocol_error`` reply naming its code, then the connection is closed. A
``request_id`` seen in the last 10 minutes gets the first reply again when it
names the same invocation (a retry), and ``duplicate_request_id`` when not.
Each channel has its own slots (:mod:`rematch_trace.live.slots`): events
``max_connections`` (128), a quarter of them per peer process; control 16,
half per process. A newcomer takes the slot of the longest-idle connection
that has no request in flight (a kept-alive one between requests first); only
when every slot holds a request in flight is it told ``busy`` and closed.

**Life.** One service per data folder (an exclusive lock on ``run/serve.lock``;
a second start finds the first and exits 0). SIGTERM or SIGINT stops it
gracefully: no new connections, held approvals cancelled (their calls denied),
in-flight replies finished for up to 2 s, sockets removed. With no connection
and nothing held for ``idle_s`` seconds (600 by default) it exits by itself;
a client starts it again on demand.

**Handlers.** A handler is ``handler(request, invocation) -> Reply`` where
``invocation`` (:class:`Invocation`) gives the peer's pid and uid, the
request's deadline on the monotonic clock, ``is_live()``, and ``after_reply``
(work to run once the reply was sent, told whether it reached the client in
time). It runs on the connection's thread and must answer before the deadline. The host's payload
is transient: no handler here logs it or writes it anywhere; the log holds
ids, decisions, reasons and fingerprints.
"""

from __future__ import annotations

import argparse
import fcntl
import gc
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from rematch_trace.live import paths, procs
from rematch_trace.live.approvals import Approval, ApprovalBook, BookFull, Outcome
from rematch_trace.live.approver_guard import Guard, Refusal, write_code
from rematch_trace.live.held import Held
from rematch_trace.live.hold_message import hold_message
from rematch_trace.live.ipc.codec import (
    MAX_REPLY_BYTES,
    MAX_REQUEST_BYTES,
    PROTOCOL_VERSION,
    DecodeError,
    FrameClosed,
    decode_payload,
    encode_frame,
    read_frame,
)
from rematch_trace.live.ipc.messages import (
    _APPROVAL_ID,
    _FINGERPRINT,
    _NONCE,
    _REQUEST_ID,
    CONTROL_KINDS,
    ControlReply,
    Reply,
    Request,
    check_request,
    make_reply,
)
from rematch_trace.live.slots import Conn, Slots

#: Seconds a frame has to arrive whole, and a reply to leave.
READ_DEADLINE_S = 1.0
REPLY_DEADLINE_S = 1.0
#: Seconds without a connection or a held call before the service exits.
IDLE_S = 600.0
#: Connections the event channel holds at once; one process may hold a quarter of them.
MAX_CONNECTIONS = 128
#: Connections the control channel holds at once (its own slots); one process may hold half.
CONTROL_CONNECTIONS = 16
#: Pending connections the kernel queues before a client's connect fails with ``EAGAIN``
#: (capped by ``net.core.somaxconn``).
LISTEN_BACKLOG = 4096
#: Request ids remembered for de-duplication: how many, for how long.
DEDUP_ENTRIES = 4096
DEDUP_TTL_S = 600.0
#: Seconds in-flight connections get to finish when the service stops.
STOP_GRACE_S = 2.0
#: Seconds a connection may idle between two requests before it is closed (silently).
KEEPALIVE_S = 5.0
#: Seconds after a verdict during which :meth:`Service.judging` still says a burst may be under way.
VERDICT_QUIET_S = 0.02
#: Seconds a held call's reply is kept ahead of its hard deadline (so it is not late): after the
#: decision the call is still recorded (``tool_blocked`` on a deny) before the reply leaves, and a
#: reply the hook client reads past its deadline is no reply (it fails open, and the call runs).
#: 50 ms was measured too little for that capture (the expiry test of tests/capture/test_live_hold.py).
HOLD_MARGIN_S = 1.0

_CRED = struct.Struct("3i")


@attrs.frozen
class Peer:
    """The process at the other end of a connection, from ``SO_PEERCRED``."""

    pid: int
    uid: int
    gid: int


class Invocation:
    """What a handler knows of the request it serves besides the request itself."""

    def __init__(self, conn: socket.socket, peer: Peer, deadline: float,
                 after: list[Callable[[bool], None]] | None = None) -> None:
        self._conn = conn
        self.peer = peer
        #: The request's hard deadline on the monotonic clock.
        self.deadline = deadline
        self._after = after if after is not None else []

    def after_reply(self, callback: Callable[[bool], None]) -> None:
        """Call ``callback(delivered)`` once the reply was sent (or failed to be).

        ``delivered`` is true when the whole reply was written to the client before
        the request's hard deadline: what the client was told, it was told in time.
        It runs on the connection's thread, after the send; it must not block long.
        """
        self._after.append(callback)

    def is_live(self) -> bool:
        """Whether the client is still connected (it has not closed or reset its end)."""
        try:
            fd = self._conn.fileno()
            if fd < 0:
                return False
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR | getattr(select, "POLLRDHUP", 0))
            events = poller.poll(0)
            if not events:
                return True
            mask = events[0][1]
            if mask & (select.POLLHUP | select.POLLERR | getattr(select, "POLLRDHUP", 0)):
                return False
            return bool(self._conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
        except (OSError, ValueError):
            return False


Handler = Callable[[Request, Invocation], Any]


class AlreadyRunning(Exception):
    """Another service holds this data folder's lock; ``pid`` is its process id when known."""

    def __init__(self, pid: int | None, socket_path: Path) -> None:
        super().__init__(f"a service is already running (pid {pid or '?'}) at {socket_path}")
        self.pid = pid


@attrs.define
class _Slot:
    key: tuple[str, str, str]
    at: float
    done: threading.Event = attrs.field(factory=threading.Event)
    reply: Any = None


def peer_of(conn: socket.socket) -> Peer:
    """The peer's pid, uid and gid (Linux ``SO_PEERCRED``)."""
    raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size)
    return Peer(*_CRED.unpack(raw))


def _readable(conn: socket.socket, timeout: float) -> bool:
    """Whether ``conn`` has a byte (or its end) to read within ``timeout`` seconds."""
    try:
        poller = select.poll()  # not select(): it cannot take a descriptor past 1023
        poller.register(conn.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR)
        return bool(poller.poll(int(timeout * 1000)))
    except (OSError, ValueError):
        return False


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Service:
    """The live service of one data folder (see the module docstring).

    :param provider: the analysis provider of ``pre_tool_use`` requests
        (``None``: only what :meth:`register_handler` adds is served).
    :param host: the plugin host that classifies actions (loaded on start when ``None``).
    """

    def __init__(
        self,
        data: Path,
        *,
        provider: Any = None,
        host: Any = None,
        idle_s: float = IDLE_S,
        max_connections: int = MAX_CONNECTIONS,
        read_deadline_s: float = READ_DEADLINE_S,
        reply_deadline_s: float = REPLY_DEADLINE_S,
    ) -> None:
        self.data = data
        self.provider = provider
        self.host = host
        self.idle_s = idle_s
        self.read_deadline_s = read_deadline_s
        self.reply_deadline_s = reply_deadline_s
        self.events_path = paths.events_socket(data)
        self.control_path = paths.control_socket(data)
        self.approvals = ApprovalBook()
        self.guard = Guard()
        #: Whether approving needs the one-time code written to the approver's terminal (the policy's
        #: ``approve_without_code`` turns it off).
        self.need_code = not getattr(getattr(provider, "policy", None), "approve_without_code", False)
        self._handlers: dict[str, Handler] = {}
        self._control: dict[str, Handler] = {
            "list_approvals": self._list_approvals,
            "show_approval": self._show_approval,
            "decide_approval": self._decide_approval,
            "request_code": self._request_code,
        }
        self._slots = {"events": Slots(max_connections, max(1, max_connections // 4)),
                       "control": Slots(CONTROL_CONNECTIONS, CONTROL_CONNECTIONS // 2)}
        self._seen: OrderedDict[str, _Slot] = OrderedDict()
        # The invocation nonces of the remembered requests, each with its request id (issue 28).
        self._nonces: dict[str, str] = {}
        self._seen_lock = threading.Lock()
        self._stop = threading.Event()
        self._stop_reason = ""
        self._active = 0
        self._active_lock = threading.Lock()
        self._last_activity = time.monotonic()
        self._listeners: list[tuple[socket.socket, Path, int]] = []
        #: An ``O_PATH`` fd on each socket file this service bound, open for its life: a client without
        #: ``SO_PEERCRED`` (the pi/omp extension) finds the file through ``/proc/PID/fd`` of the lock holder
        #: and connects through that link, so it reaches this service's socket whatever lies at the path.
        self._socket_anchors: list[int] = []
        self._threads: list[threading.Thread] = []
        self._lock_fd: int | None = None
        #: Where a held call's "run `rematch approve ID`" line goes besides the log (``rematch serve``: stderr).
        self.announce: Callable[[str], None] | None = None
        self._stop_hooks: list[Callable[[float], object]] = []
        self._judging = 0
        self._judged_at = 0.0
        #: Request id -> how its held call ended (:class:`Held`), until live capture takes it (:meth:`held`).
        self._held: OrderedDict[str, Held] = OrderedDict()
        self._held_lock = threading.Lock()
        #: The sealed memory file holding the policy's bytes (``service_identity.anchor_policy``), kept open.
        self.policy_anchor: int | None = None
        if provider is not None:
            self.register_handler("pre_tool_use", self._pre_tool_use)

    # -- the registry ------------------------------------------------------------------------

    def register_handler(self, request_kind: str, handler: Handler) -> None:
        """Serve requests of ``request_kind`` on the event channel with ``handler``.

        ``handler(request, invocation)`` returns the :class:`Reply` to send
        (build it with :func:`~rematch_trace.live.ipc.messages.make_reply`). A
        later registration of the same kind replaces the earlier one. The
        control kinds (approvals) cannot be registered here.
        """
        if request_kind in CONTROL_KINDS:
            raise ValueError(f"{request_kind!r} belongs to the control channel; the event channel never serves it")
        self._handlers[request_kind] = handler

    def handler(self, request_kind: str) -> Handler | None:
        """The handler serving ``request_kind`` on the event channel, or ``None`` (to wrap it)."""
        return self._handlers.get(request_kind)

    def at_stop(self, hook: Callable[[float], object]) -> None:
        """Call ``hook(seconds_left)`` when the service stops, once in-flight replies are done.

        Live capture drains its write queue here (the writes that follow replies).
        """
        self._stop_hooks.append(hook)

    # -- life --------------------------------------------------------------------------------

    def log(self, line: str) -> None:
        """One line in the data folder's live log."""
        paths.append_log(self.data, f"{_stamp()} serve {line}")

    def start(self) -> None:
        """Take the folder's lock, bind both sockets, start accepting.

        :raises AlreadyRunning: another service holds the lock.
        """
        if not hasattr(socket, "SO_PEERCRED"):
            raise OSError("this platform has no SO_PEERCRED: the service cannot check its peers, so it does not start")
        self.data.mkdir(mode=0o700, parents=True, exist_ok=True)
        # The folder made, or passed over for the next name when another user made it first (docs/ipc-v2.md).
        run = paths.make_run_dir(self.data)
        self.events_path, self.control_path = run / "events.sock", run / "control.sock"
        lock_path = run / "serve.lock"
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            raise AlreadyRunning(int(text) if text.isdigit() else None, self.events_path) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock_fd = fd
        if self.host is None and self.provider is not None:
            from rematch_trace.host.facade import Host
            from rematch_trace.host.loading import load_plugins, pm

            load_plugins()
            self.host = Host(pm)
        # What start-up built (plugins, compiled rules) lives as long as the service: keep the
        # collector from walking it again on every full collection, a pause a request would wait on.
        # Done before the sockets exist: a collection holds the interpreter lock, and no request waits.
        gc.collect()
        gc.freeze()
        for path in (self.events_path, self.control_path):
            self._listeners.append(self._bind(path))
        for (sock, _, _), channel in zip(self._listeners, ("events", "control"), strict=True):
            t = threading.Thread(target=self._accept_loop, args=(sock, channel), name=f"rematch-accept-{channel}",
                                 daemon=True)
            t.start()
            self._threads.append(t)
        self.log(f"started pid={os.getpid()} socket={self.events_path} "
                 f"provider={getattr(self.provider, 'mode', 'none')}")
        # A command the risk rules' shell reader could not read (held as dynamic execution) is noted here.
        from rematch_trace.security.shell import report_limits_to

        report_limits_to(lambda line: self.log(f"rules {line}"))

    def _bind(self, path: Path) -> tuple[socket.socket, Path, int]:
        try:
            os.unlink(path)  # a stale socket of a service that died: the lock says none runs now
        except FileNotFoundError:
            pass
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # the socket is born 0600: no window where another user could connect
        try:
            sock.bind(os.fspath(path))
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        anchor = os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
        self._socket_anchors.append(anchor)
        sock.listen(LISTEN_BACKLOG)
        sock.settimeout(0.25)
        return sock, path, os.fstat(anchor).st_ino

    def request_stop(self, reason: str) -> None:
        """Ask the service to stop (safe from a signal handler)."""
        if not self._stop.is_set():
            self._stop_reason = reason
            self._stop.set()

    def run(self) -> str:
        """Serve until stopped or idle; then shut down gracefully. The reason it stopped."""
        while not self._stop.wait(0.2):
            with self._active_lock:
                idle = self._active == 0 and time.monotonic() - self._last_activity > self.idle_s
            if idle and not self.approvals.pending():
                self.request_stop("idle")
        self.shutdown()
        return self._stop_reason

    def shutdown(self) -> None:
        """Stop accepting, cancel held calls, let in-flight replies finish, remove the sockets."""
        self.request_stop(self._stop_reason or "shutdown")
        for sock, path, ino in self._listeners:
            sock.close()
            try:
                if os.stat(path).st_ino == ino:  # never remove a socket a newer service bound
                    os.unlink(path)
            except OSError:
                pass
        self._listeners = []
        for anchor in self._socket_anchors:
            os.close(anchor)
        self._socket_anchors = []
        cancelled = self.approvals.cancel_all()
        end = time.monotonic() + STOP_GRACE_S
        while time.monotonic() < end:
            with self._active_lock:
                if self._active == 0:
                    break
            time.sleep(0.01)
        for t in self._threads:
            t.join(max(0.0, end - time.monotonic()))
        for hook in self._stop_hooks:
            try:
                hook(max(STOP_GRACE_S, end - time.monotonic()))
            except Exception as err:
                self.log(f"stop_hook_failed error={type(err).__name__}")
        self.log(f"stopped reason={self._stop_reason} cancelled_approvals={cancelled}")
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # -- connections -------------------------------------------------------------------------

    def _accept_loop(self, sock: socket.socket, channel: str) -> None:
        me = os.getuid()
        while not self._stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._stop.is_set():
                    return
                time.sleep(0.05)  # EMFILE and the like: back off rather than spin
                continue
            try:
                peer = peer_of(conn)
            except OSError:
                conn.close()
                continue
            if peer.uid != me:
                self.log(f"refused channel={channel} peer_uid={peer.uid} peer_pid={peer.pid}")
                conn.close()
                continue
            slot = self._slots[channel].admit(conn, peer.pid)
            if slot is None:
                # Every slot holds a request in flight (idle ones were given up first): say so, the
                # client retries within its deadline.
                self._send_error(conn, channel, None, "busy", "the service is at its connection bound; retry")
                conn.close()
                continue
            with self._active_lock:
                self._active += 1
                self._last_activity = time.monotonic()
            t = threading.Thread(target=self._serve, args=(conn, channel, peer, slot), name="rematch-conn",
                                 daemon=True)
            try:
                t.start()
            except RuntimeError:  # no thread to be had: answer busy, free the slot
                self._send_error(conn, channel, None, "busy", "no thread available")
                self._release(conn, channel, slot)

    def _release(self, conn: socket.socket, channel: str, slot: Conn) -> None:
        conn.close()
        self._slots[channel].leave(slot)
        with self._active_lock:
            self._active -= 1
            self._last_activity = time.monotonic()

    def _serve(self, conn: socket.socket, channel: str, peer: Peer, slot: Conn) -> None:
        try:
            first = True
            while not self._stop.is_set():
                # Between requests a kept-open connection may idle (up to KEEPALIVE_S) without
                # a protocol error; once a frame begins, it has the read deadline to arrive whole.
                if not first and not _readable(conn, KEEPALIVE_S):
                    return
                first = False
                try:
                    payload = read_frame(conn, MAX_REQUEST_BYTES, time.monotonic() + self.read_deadline_s)
                except FrameClosed:
                    return
                except DecodeError as err:
                    self._send_error(conn, channel, None, err.code, err.message)
                    return
                except OSError:
                    return
                if not self._slots[channel].begin(slot):
                    return  # given up to a newcomer while its frame was read: the client retries
                rid: str | None = None
                try:
                    obj = decode_payload(payload)
                    if isinstance(obj, dict):
                        v = obj.get("request_id")
                        rid = v if isinstance(v, str) and _REQUEST_ID.fullmatch(v) else None
                    request = check_request(obj)
                except DecodeError as err:
                    self._send_error(conn, channel, rid, err.code, err.message)
                    return
                after: list[Callable[[bool], None]] = []
                reply = self._dispatch(conn, channel, peer, request, after)
                sent = False
                try:
                    sent = self._send(conn, reply)
                finally:
                    # What a handler does after its reply (capture's write of a denied call) learns
                    # whether the client had it in time: the trace records what the harness was told.
                    self._after_reply(after, sent and time.time_ns() // 1_000_000 <= request["hard_deadline_ms"])
                self._slots[channel].end(slot)
                if not sent:
                    return
        finally:
            self._release(conn, channel, slot)

    def _after_reply(self, callbacks: list[Callable[[bool], None]], delivered: bool) -> None:
        for callback in callbacks:
            try:
                callback(delivered)
            except Exception as err:  # a failing callback is logged by type; the connection goes on
                self.log(f"after_reply_failed error={type(err).__name__}")

    def _send(self, conn: socket.socket, message: Any) -> bool:
        try:
            frame = encode_frame(message, MAX_REPLY_BYTES)
        except DecodeError as err:  # a handler's reply out of bounds: say so rather than send it
            self.log(f"unsendable_reply code={err.code}")
            frame = encode_frame(make_reply(message.get("request_id"), "no_override", "reply_too_long",
                                            "The handler's reply exceeded the reply bound.", source="service"),
                                 MAX_REPLY_BYTES)
        try:
            conn.settimeout(self.reply_deadline_s)
            conn.sendall(frame)
            return True
        except OSError:
            return False

    def _send_error(self, conn: socket.socket, channel: str, rid: str | None, code: str, message: str) -> None:
        if channel == "control":
            self._send(conn, _control_reply(rid, False, code, message))
        else:
            self._send(conn, make_reply(rid, "no_override", code, message[:500], source="protocol_error"))

    def _dispatch(self, conn: socket.socket, channel: str, peer: Peer, request: Request,
                  after: list[Callable[[bool], None]]) -> Any:
        rid = request["request_id"]
        now_ms = time.time_ns() // 1_000_000
        deadline = time.monotonic() + (request["hard_deadline_ms"] - now_ms) / 1000
        registry = self._control if channel == "control" else self._handlers
        handler = registry.get(request["request_kind"])
        if handler is None:
            msg = f"no handler for {request['request_kind']!r} on the {channel} channel"
            if channel == "control":
                return _control_reply(rid, False, "unknown_request_kind", msg)
            return make_reply(rid, "no_override", "unknown_request_kind", msg, source="protocol_error")
        invocation = Invocation(conn, peer, deadline, after)
        if channel == "events":
            self._note_harness(peer, request)
        if channel == "control":
            return self._guarded(handler, request, invocation, channel)
        key = (request["invocation_nonce"], request["request_kind"], request["adapter"])
        nonce = request["invocation_nonce"]
        with self._seen_lock:
            self._expire_seen()
            slot = self._seen.get(rid)
            first = slot is None
            # A nonce names one invocation: under another request id it is a replay, not a retry.
            reused = first and self._nonces.get(nonce, rid) != rid
            if first and not reused:
                slot = self._seen[rid] = _Slot(key, time.monotonic())
                self._nonces[nonce] = rid
        if reused:
            self.log(f"nonce_reused request_id={rid}")
            return make_reply(rid, "no_override", "nonce_reused",
                              "This invocation nonce was already used by another request.", source="service")
        assert slot is not None
        if not first:
            if slot.key != key:
                return make_reply(rid, "no_override", "duplicate_request_id",
                                  "This request id was already used for another invocation.", source="service")
            if slot.done.wait(max(0.0, deadline - time.monotonic())):
                return slot.reply
            return make_reply(rid, "no_override", "deadline_passed",
                              "The first copy of this request is still being answered.", source="service")
        if deadline <= time.monotonic():
            reply = make_reply(rid, "no_override", "deadline_passed", "The request arrived after its hard deadline.",
                               source="service")
        else:
            reply = self._guarded(handler, request, invocation, channel)
        slot.reply = reply
        slot.done.set()
        return reply

    @staticmethod
    def _in_harness(peer: Peer, request: Request) -> bool:
        """Whether the client runs inside the harness (pi's or omp's extension), so is the harness itself.

        It says so by naming its own pid (``host_payload.harness_pid``), which must be the
        connection's (``SO_PEERCRED``). A client that claims it only gets itself recorded in place
        of its parent: more taint for its own tree, none removed.
        """
        payload = request.get("host_payload")
        return type(payload) is dict and payload.get("harness_pid") == peer.pid

    def _note_harness(self, peer: Peer, request: Request) -> None:
        try:
            self.guard.note_client(peer.pid, itself=self._in_harness(peer, request))
        except Exception as err:  # the record is for the approval guard; a request never fails on it
            self.log(f"harness_unrecorded peer_pid={peer.pid} error={type(err).__name__}")

    def _expire_seen(self) -> None:
        cutoff = time.monotonic() - DEDUP_TTL_S
        while self._seen:
            oldest = next(iter(self._seen.values()))
            if len(self._seen) < DEDUP_ENTRIES and oldest.at > cutoff:
                break
            rid, slot = self._seen.popitem(last=False)
            if self._nonces.get(slot.key[0]) == rid:
                del self._nonces[slot.key[0]]

    def _guarded(self, handler: Handler, request: Request, invocation: Invocation, channel: str) -> Any:
        try:
            return handler(request, invocation)
        except Exception as err:  # a failing handler answers, and says so in the log (no payload)
            self.log(f"handler_failed kind={request['request_kind']} request_id={request['request_id']} "
                     f"error={type(err).__name__}")
            if channel == "control":
                return _control_reply(request["request_id"], False, "handler_failed", type(err).__name__)
            return make_reply(request["request_id"], "no_override", "handler_failed",
                              f"The {request['request_kind']} handler failed: {type(err).__name__}.", source="service")

    # -- pre_tool_use ------------------------------------------------------------------------

    def verdict(self, request: Request, inv: Invocation) -> Reply:
        """The ``pre_tool_use`` verdict of ``request``'s call (its ``host_payload`` as that handler reads it).

        Also what live capture's ``hook_event`` handler asks for a ``PreToolUse`` payload.
        """
        return self._pre_tool_use(request, inv)

    def judging(self) -> bool:
        """Whether a verdict is being decided, or was a moment ago (a burst: more are on their way).

        Live capture's writer waits while this holds (briefly): writes and verdicts share one
        interpreter lock, and a verdict's deadline is the harness's.
        """
        return self._judging > 0 or time.monotonic() - self._judged_at < VERDICT_QUIET_S

    def _pre_tool_use(self, request: Request, inv: Invocation) -> Reply:
        with self._active_lock:
            self._judging += 1
        try:
            return self._judge(request, inv)
        finally:
            with self._active_lock:
                self._judging -= 1
                self._judged_at = time.monotonic()

    def _judge(self, request: Request, inv: Invocation) -> Reply:
        from rematch_trace.live.verdicts.local import incident_of, judge
        from rematch_trace.live.verdicts.provider import ProviderUnavailable

        rid = request["request_id"]
        try:
            # The one verdict path: the hook's own fallback (verdicts/local.py) judges with it too.
            action, verdict = judge(self.host, self.provider, request, inv.deadline)
        except DecodeError as err:
            return make_reply(rid, "no_override", err.code, err.message, source="service")
        except ProviderUnavailable as err:
            return make_reply(rid, "no_override", "provider_unavailable", str(err), source="service")
        tool_class = action.action_type
        if time.monotonic() > inv.deadline:
            return make_reply(rid, "no_override", "provider_deadline", "The provider answered after the deadline.",
                              source="service", tool_class=tool_class)
        fp = action.binding or action.event["action_fingerprint"] or request["invocation_nonce"]
        incident = incident_of(action, request["invocation_nonce"])
        if verdict.decision == "hold":
            payload = request.get("host_payload")
            asking = type(payload) is dict and payload.get("hook_event_name") == "PermissionRequest"
            if asking and self.approvals.approved_call(action.event["action_fingerprint"]):
                # The harness asks its person about a call a person already approved here (at its
                # PreToolUse): not held twice; the harness's own question goes on as usual.
                return make_reply(rid, "no_override", "approval:approved",
                                  "A person approved this call when it was held.", source="approval",
                                  tool_class=tool_class)
            return self._hold(request, inv, action, verdict, incident)
        if verdict.decision == "deny":
            self.log(f"deny request_id={rid} reason={verdict.reason} tool_class={tool_class} fingerprint={fp}")
            return make_reply(rid, "deny", verdict.reason, verdict.explanation, source=verdict.source,
                              tool_class=tool_class, incident_id=incident)
        return make_reply(rid, "no_override", verdict.reason, verdict.explanation, source=verdict.source,
                          tool_class=tool_class)

    def _hold(self, request: Request, inv: Invocation, action: Any, verdict: Any, incident: str) -> Reply:
        rid = request["request_id"]
        tool_class = action.action_type
        if action.binding is None:
            return make_reply(rid, "deny", f"{verdict.reason}.unbindable",
                              "The call needs an approval, but its input has no exact form to bind one to.",
                              source=verdict.source, tool_class=tool_class, incident_id=incident)
        ev = action.event
        # The harness that asked, bound to this hold: every approver is checked against it whatever the
        # guard's table holds (a client with no harness above it, re-parented to init, is bound itself).
        itself = self._in_harness(inv.peer, request)
        bound = self.guard.note_client(inv.peer.pid, itself=itself)
        if bound is None:
            client = procs.stat(inv.peer.pid)
            bound = None if client is None else self.guard.record(client)
        if bound is None:
            return make_reply(rid, "deny", f"{verdict.reason}.unbound",
                              "The call needs an approval, but the process that asked cannot be read.",
                              source=verdict.source, tool_class=tool_class, incident_id=incident)
        harness_proc = bound.proc
        # The whole redacted text a person approves (the event's summary is cut at 200 characters).
        from rematch_trace.live.approval_text import held_text
        from rematch_trace.security.redact import default_redactor

        payload = request["host_payload"]
        command, dropped = held_text(default_redactor(), tool_class, ev["tool_name"] or "",
                                     payload.get("tool_input") if type(payload) is dict else None)
        approval = Approval(
            approval_id=self.approvals.new_id(), fingerprint=action.binding, nonce=action.nonce, request_id=rid,
            adapter=request["adapter"], session=ev["source_session_id"], agent_sub_id=ev["agent_sub_id"],
            tool_name=ev["tool_name"], tool_class=tool_class, summary=ev["args_summary"] or "",
            risk_features=list(ev["risk_features"]), rule=verdict.reason,
            expires_at=min(time.monotonic() + verdict.approval_timeout_s, inv.deadline - HOLD_MARGIN_S),
            # Live while its client waits and its harness runs (that very process, by its start time).
            is_live=lambda: inv.is_live() and procs.same(harness_proc), harness_pid=harness_proc.pid,
            harness=bound, command=command, command_dropped=dropped,
            event_fingerprint=ev["action_fingerprint"],
        )
        try:
            self.approvals.hold(approval)
        except BookFull as err:
            return make_reply(rid, "deny", "approvals_full", f"The call needs an approval, but {err}.",
                              source=verdict.source, tool_class=tool_class, incident_id=incident)
        self.log(f"hold approval_id={approval.approval_id} request_id={rid} reason={verdict.reason} "
                 f"fingerprint={approval.fingerprint}")
        held_at = time.monotonic()
        wait_s = max(0.0, approval.expires_at - held_at)
        if self.announce is not None:
            # The person who runs `rematch serve` in a terminal sees what to type, while the call waits.
            self.announce(f"rematch serve: {hold_message(approval.approval_id, 'pending', verdict.explanation, wait_s)}"
                          f" [{tool_class}: {approval.summary[:120]}]")
        state = self.approvals.wait(approval)
        self.log(f"approval approval_id={approval.approval_id} state={state}")
        with self._held_lock:
            # What the session's security stream records of this hold (live capture takes it: held()).
            self._held[rid] = Held(approval.approval_id, verdict.reason, state,
                                   max(0, int((time.monotonic() - held_at) * 1000)))
            while len(self._held) > HELD_KEPT:
                self._held.popitem(last=False)
        text = hold_message(approval.approval_id, state, verdict.explanation, wait_s)
        if state == "approved":
            return make_reply(rid, "no_override", "approval:approved", text, source="approval",
                              tool_class=tool_class)
        return make_reply(rid, "deny", f"approval:{state}", text,
                          source="approval", tool_class=tool_class, incident_id=incident)

    def held(self, request_id: str) -> Held | None:
        """How the held call of ``request_id`` ended, once (``None``: it was not held, or was taken)."""
        with self._held_lock:
            return self._held.pop(request_id, None)

    # -- control channel ---------------------------------------------------------------------

    def _list_approvals(self, request: Request, inv: Invocation) -> ControlReply:
        if request["host_payload"]:
            return _control_reply(request["request_id"], False, "unexpected_field", "list_approvals takes no payload")
        views = [a.view() for a in self.approvals.pending()]
        return _control_reply(request["request_id"], True, None, f"{len(views)} pending", views)

    def _show_approval(self, request: Request, inv: Invocation) -> ControlReply:
        """One held call with as much of its command as one reply carries (and the risky parts of the rest)."""
        rid = request["request_id"]
        p = request["host_payload"]
        if set(p) != {"approval_id"} or not isinstance(p["approval_id"], str):
            return _control_reply(rid, False, "unexpected_field", "show_approval takes approval_id")
        if not _APPROVAL_ID.fullmatch(p["approval_id"]):
            return _control_reply(rid, False, "invalid_value", f"approval_id must match {_APPROVAL_ID.pattern}")
        a = self.approvals.get(p["approval_id"])
        if a is None:
            return _control_reply(rid, False, "unknown_approval", f"no pending approval {p['approval_id']}")
        from rematch_trace.live.approval_text import SHOWN_BYTES

        return _control_reply(rid, True, None, "1 pending", [a.view(SHOWN_BYTES)])

    def _binding(self, rid: str, p: dict[str, Any], extra: set[str]) -> ControlReply | None:
        """A refusal when ``p`` is not exactly an approval's binding plus ``extra`` keys."""
        fields = {"approval_id": _APPROVAL_ID, "action_fingerprint": _FINGERPRINT, "invocation_nonce": _NONCE}
        if not {*fields} <= set(p) or not set(p) - {*fields} <= extra:
            names = ", ".join([*fields, *sorted(extra)])
            return _control_reply(rid, False, "unexpected_field", f"this request takes {names}")
        for k, pattern in fields.items():
            if not isinstance(p[k], str) or not pattern.fullmatch(p[k]):
                return _control_reply(rid, False, "invalid_value", f"{k} must match {pattern.pattern}")
        return None

    def _request_code(self, request: Request, inv: Invocation) -> ControlReply:
        rid = request["request_id"]
        p = request["host_payload"]
        bad = self._binding(rid, p, set())
        if bad is not None:
            return bad
        bound = self.approvals.bound_harnesses()
        term = self.guard.vet_approver(inv.peer.pid, bound) or self.guard.vet_terminal(inv.peer.pid, bound)
        if isinstance(term, Refusal):
            self.log(f"request_code approval_id={p['approval_id']} ok=False error={term.error} "
                     f"approver_pid={inv.peer.pid}")
            return _control_reply(rid, False, term.error, term.message)
        code, outcome = self.approvals.issue_code(p["approval_id"], p["action_fingerprint"], p["invocation_nonce"],
                                                  term.tty_nr)
        if code is not None:
            text = (f"\r\n[rematch] one-time code to approve {p['approval_id']}: {code}\r\n"
                    "[rematch] type it only at a rematch approve prompt you started yourself.\r\n")
            if not write_code(term, text):
                self.approvals.void_code(p["approval_id"])
                outcome = attrs.evolve(outcome, ok=False, error="no_terminal",
                                       message=f"the code could not be written to {term.path}")
        # The code itself is never logged, nor sent back: only the terminal shows it.
        self.log(f"request_code approval_id={p['approval_id']} ok={outcome.ok} error={outcome.error} "
                 f"approver_pid={inv.peer.pid}")
        return _control_reply(rid, outcome.ok, outcome.error, outcome.message)

    def _decide_approval(self, request: Request, inv: Invocation) -> ControlReply:
        rid = request["request_id"]
        p = request["host_payload"]
        bad = self._binding(rid, p, {"decision", "code"})
        if bad is not None:
            return bad
        if p.get("decision") not in ("approve", "deny"):
            return _control_reply(rid, False, "invalid_value", "decision must be approve or deny")
        code = p.get("code")
        if code is not None and (not isinstance(code, str) or not 1 <= len(code) <= 32):
            return _control_reply(rid, False, "invalid_value", "code must be a string of at most 32 characters")
        approve = p["decision"] == "approve"
        bound = self.approvals.bound_harnesses()
        refusal = self.guard.vet_approver(inv.peer.pid, bound, approving=approve)
        tty_nr: int | None = None
        if refusal is None and approve and self.need_code and code is not None:
            term = self.guard.vet_terminal(inv.peer.pid, bound)
            if isinstance(term, Refusal):
                refusal = term
            else:
                tty_nr = term.tty_nr
        if refusal is not None:
            outcome = Outcome(False, refusal.error, refusal.message)
        else:
            outcome = self.approvals.decide(p["approval_id"], p["action_fingerprint"], p["invocation_nonce"],
                                            approve, approver_pid=inv.peer.pid, need_code=self.need_code,
                                            code=code, tty_nr=tty_nr)
        self.log(f"decide approval_id={p['approval_id']} decision={p['decision']} ok={outcome.ok} "
                 f"error={outcome.error} approver_pid={inv.peer.pid}")
        return _control_reply(rid, outcome.ok, outcome.error, outcome.message)


#: Holds remembered for live capture to take (:meth:`Service.held`); the oldest go past this.
HELD_KEPT = 256


def _control_reply(rid: str | None, ok: bool, error: str | None, message: str,
                   approvals: list[Any] | None = None) -> ControlReply:
    return {"protocol_version": PROTOCOL_VERSION, "request_id": rid, "ok": ok, "error": error,
            "message": message[:512], "approvals": approvals or []}


def _policy_line(provider: Any) -> str:
    """The policy in force as ``rematch serve``'s start line says it (its file, overrides, disabled rules)."""
    policy = getattr(provider, "policy", None)
    return policy.describe() if policy is not None else "none"


def serve(data: Path, *, policy: str | None = None, mode: str = "localRulesOnly", idle_s: float = IDLE_S,
          quiet: bool = False, ready: Callable[[Service], None] | None = None) -> int:
    """Run the service of ``data`` in this process until it stops; the exit status.

    0 when it ran and stopped (idle, SIGTERM, SIGINT), and when another service
    already serves the folder; 2 when the policy, the provider or the socket
    folder is unusable (one line on stderr says why).
    """
    from rematch_trace.live.verdicts.policy import PolicyError, load_policy
    from rematch_trace.live.verdicts.provider import make_provider

    def say(text: str) -> None:
        if not quiet:
            print(text, file=sys.stderr, flush=True)

    data = Path(os.path.abspath(data))
    noted = os.path.abspath(os.path.expanduser(policy)) if policy else None  # (before the chdir below)
    try:
        provider = make_provider(mode, load_policy(policy))
    except (PolicyError, ValueError) as err:
        say(f"rematch serve: {err}")
        paths.append_log(data, f"{_stamp()} serve refused_to_start cause={str(err)[:300]}")
        return 2
    available = provider.availability()
    if not available.available:
        say(f"rematch serve: provider {mode} is unavailable: {available.reason}")
        return 2
    service = Service(data, provider=provider, idle_s=idle_s)
    # Live capture (docs/live-capture.md) serves its hook_event requests here, through the registry.
    from rematch_trace.live.capture import register_capture

    register_capture(service, data)
    if not quiet:
        service.announce = say
    # A resident process holds no folder of whoever started it (a hook's project, say) in use.
    os.chdir("/")
    if threading.current_thread() is threading.main_thread():
        # Before the sockets exist: a SIGTERM right after the first reply must stop it gracefully too.
        signal.signal(signal.SIGTERM, lambda *_: service.request_stop("SIGTERM"))
        signal.signal(signal.SIGINT, lambda *_: service.request_stop("SIGINT"))
    try:
        service.start()
    except AlreadyRunning as err:
        say(f"rematch serve: {err}")
        return 0
    except OSError as err:
        say(f"rematch serve: cannot listen: {err}")
        paths.append_log(data, f"{_stamp()} serve refused_to_start cause={str(err)[:300]}")
        return 2
    # The hook judges a call itself when this service cannot answer it: with this service's policy.
    from rematch_trace.live.service_identity import anchor_policy
    from rematch_trace.live.verdicts.local import note_policy
    from rematch_trace.live.verdicts.policy import DEFAULT_POLICY, policy_path

    # The policy's bytes, sealed in memory for the service's life (the hook's fallback reads them there, not
    # from a note another process could rewrite), and noted with their digest (docs/threat-model.md).
    source = policy_path(noted)
    try:
        text = b"" if source.resolve() == DEFAULT_POLICY.resolve() else source.read_bytes()[: 1 << 20]
    except OSError:
        text = b""
    service.policy_anchor = anchor_policy(text)
    note_policy(data, str(source) if text else None, text)
    say(f"rematch serve: listening on {service.events_path} (control: {service.control_path}), "
        f"provider {mode}, policy {_policy_line(provider)}")
    if ready is not None:
        ready(service)
    reason = service.run()
    say(f"rematch serve: stopped ({reason})")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m rematch_trace.live.service``: what a client runs to start the service on demand."""
    ap = argparse.ArgumentParser(prog="rematch-serve")
    ap.add_argument("--data", default=None)
    ap.add_argument("--policy", default=None)
    ap.add_argument("--provider", default="localRulesOnly")
    ap.add_argument("--idle-seconds", type=float, default=IDLE_S)
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    return serve(paths.data_folder(args.data), policy=args.policy, mode=args.provider, idle_s=args.idle_seconds,
                 quiet=args.quiet)


__all__ = ["AlreadyRunning", "Handler", "Invocation", "Peer", "Service", "main", "peer_of", "serve"]

if __name__ == "__main__":
    sys.exit(main())
