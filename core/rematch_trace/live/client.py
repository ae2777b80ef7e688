"""The client of the live service: one request, one reply, or ``None`` (fail open).

A hook imports this module on every tool call, so it imports the standard
library and the codec only (``bench/ipc.py`` measures the import). Typical
use in an adapter::

    from rematch_trace.live import client

    reply = client.ask("pre_tool_use", hook_input, adapter="claude_code",
                       adapter_version="0.1.0", host_version="2.1.200")
    if reply is not None and reply["decision"] == "deny":
        ...  # block the call, showing reply["explanation"]

:func:`ask` finds the service's socket from the data folder
(:mod:`rematch_trace.live.paths`), starts ``rematch serve`` when nothing
listens there, and returns ``None`` on any failure before its deadline: no
service, a refused or slow one, a garbled or mismatched reply. Each failure is
one line in the data folder's ``live.log`` (ids and the cause, never the
host's input). ``None`` means *no override*: the host's own permissions
decide, exactly as if rematch were not installed.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from rematch_trace.live import paths
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
from rematch_trace.live.ipc.messages import Reply, Request, check_reply, check_request, make_reply
from rematch_trace.live.service_identity import socket_problem

#: Default budget of one request, milliseconds (``REMATCH_IPC_DEADLINE_MS`` overrides it).
DEFAULT_DEADLINE_MS = 1500
#: How often a client polls for a service it has just started, seconds.
_CONNECT_POLL_S = 0.01
#: Backoff between two tries of a busy service (``EAGAIN`` at connect, a ``busy`` reply, a
#: connection closed before any reply): the first pause, and the longest; each is jittered.
_BACKOFF_FIRST_S = 0.005
_BACKOFF_MAX_S = 0.1


def new_request(
    kind: str,
    payload: dict[str, Any],
    *,
    adapter: str,
    adapter_version: str,
    host_version: str,
    deadline_ms: int | None = None,
    request_id: str | None = None,
) -> Request:
    """A v2 request with a fresh 128-bit system-random nonce, received now.

    :param deadline_ms: the budget from now (``hard_deadline_ms`` is now plus it).
    :param request_id: defaults to a random id; a retry of the same request reuses its id.
    """
    if deadline_ms is None:
        deadline_ms = _default_deadline_ms()
    now = time.time_ns() // 1_000_000
    return {
        "protocol_version": PROTOCOL_VERSION,
        "request_id": request_id or os.urandom(12).hex(),
        "request_kind": kind,
        "adapter": adapter,
        "adapter_version": adapter_version,
        "received_at_ms": now,
        "hard_deadline_ms": now + max(1, deadline_ms),
        "host_version": host_version,
        "invocation_nonce": os.urandom(16).hex(),
        "host_payload": payload,
    }


def _default_deadline_ms() -> int:
    text = os.environ.get("REMATCH_IPC_DEADLINE_MS", "")
    return int(text) if text.isdigit() and 0 < int(text) <= 600_000 else DEFAULT_DEADLINE_MS


class ExchangeFailed(Exception):
    """Why a request got no usable reply (one word, then detail)."""


def _connect(sock_path: Path, deadline: float, data: Path, start: bool) -> socket.socket:
    started = False
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        try:
            sock.connect(os.fspath(sock_path))
            return sock
        except (FileNotFoundError, ConnectionRefusedError) as err:
            sock.close()
            if not start:
                raise ExchangeFailed(f"no_service: {type(err).__name__}") from None
            if not started:
                _start_service(data)
                started = True
        except BlockingIOError:  # EAGAIN: the listen queue is full (a burst); the caller backs off
            sock.close()
            raise _Busy("busy: EAGAIN at connect") from None
        except OSError as err:
            sock.close()
            raise ExchangeFailed(f"connect_failed: {type(err).__name__}: {err}") from None
        if time.monotonic() + _CONNECT_POLL_S >= deadline:
            raise ExchangeFailed("no_service: started one, it did not listen before the deadline")
        time.sleep(_CONNECT_POLL_S)


def _start_service(data: Path) -> None:
    """Start ``rematch serve`` for ``data`` in its own session; a second one finds the first and exits."""
    import subprocess  # only on the rare start: it costs more than the rest of this module

    subprocess.Popen(
        [sys.executable, "-m", "rematch_trace.live.service", "--data", os.path.abspath(data), "--quiet"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True,
    )


class _Reset(ExchangeFailed):
    """The connection was reset before any reply: the listener closed (a service stopping or dying)."""


class _Busy(ExchangeFailed):
    """The service is at its bound: its listen queue is full (``EAGAIN``), or it answered ``busy``."""


def _is_busy(value: Any) -> bool:
    """Whether ``value`` is the service's ``busy`` refusal (an event reply or a control reply)."""
    return isinstance(value, dict) and (
        (value.get("decision_source") == "protocol_error" and value.get("reason") == "busy")
        or (value.get("ok") is False and value.get("error") == "busy"))


def _jittered(delay: float) -> float:
    """``delay`` times a random factor in [0.5, 1.5): callers that were refused together do not retry together."""
    return delay * (0.5 + int.from_bytes(os.urandom(2), "big") / 65536)


def exchange(sock_path: Path, message: dict[str, Any], deadline: float, *, data: Path, start: bool,
             limit: int = MAX_REPLY_BYTES) -> Any:
    """Send ``message`` as one frame to ``sock_path``, return the decoded reply payload.

    A busy service (its listen queue full: ``EAGAIN`` at connect; a ``busy``
    reply) and a connection closed or reset before any reply (a service
    stopping as the client connected, or one that gave the idle connection's
    slot to another) are tried again, with jittered exponential backoff (5 ms
    doubling to 100 ms), until ``deadline``. Asking twice is safe: a verdict
    has no side effect, and the service answers a repeated request id with its
    first reply (a captured event is applied once).

    :raises ExchangeFailed: on anything that is not one well-framed, bounded reply before ``deadline``.
    """
    delay = _BACKOFF_FIRST_S
    while True:
        try:
            value = _exchange_once(sock_path, message, deadline, data=data, start=start, limit=limit)
            if not _is_busy(value):
                return value
            why: ExchangeFailed = _Busy("busy: the service is at its connection bound")
        except (_Reset, _Busy) as err:
            why = err
        pause = _jittered(delay)
        if time.monotonic() + pause >= deadline:
            raise why
        time.sleep(pause)
        delay = min(delay * 2, _BACKOFF_MAX_S)


def _exchange_once(sock_path: Path, message: dict[str, Any], deadline: float, *, data: Path, start: bool,
                   limit: int) -> Any:
    sock = _connect(sock_path, deadline, data, start)
    try:
        # The socket's process must be the service that holds the folder's lock, and not stopped: another
        # process answering there (a socket moved aside and replaced) is never believed (docs/threat-model.md).
        why = socket_problem(sock, sock_path.parent)
        if why is not None:
            raise ExchangeFailed(why)
        try:
            frame = encode_frame(message, MAX_REQUEST_BYTES)
        except DecodeError as err:
            raise ExchangeFailed(f"unsendable: {err.code}") from None
        try:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            sock.sendall(frame)
        except (ConnectionResetError, BrokenPipeError) as err:
            raise _Reset(f"send_failed: {type(err).__name__}") from None
        except OSError as err:
            raise ExchangeFailed(f"send_failed: {type(err).__name__}") from None
        try:
            payload = read_frame(sock, limit, deadline)
            return decode_payload(payload, min(deadline, time.monotonic() + 0.1))
        except FrameClosed:
            raise _Reset("closed: the service closed the connection without a reply") from None
        except DecodeError as err:
            raise ExchangeFailed(f"bad_reply: {err.code}") from None
        except ConnectionResetError as err:
            raise _Reset(f"receive_failed: {type(err).__name__}") from None
        except OSError as err:
            raise ExchangeFailed(f"receive_failed: {type(err).__name__}") from None
    finally:
        sock.close()


def send(request: Request, *, data: str | os.PathLike[str] | None = None, start: bool = True) -> Reply | None:
    """Send ``request`` to the service and return its reply, or ``None`` (see the module docstring).

    The deadline is the request's own ``hard_deadline_ms``. A reply must carry
    the request's id; one that does not counts as a failure.
    """
    folder = paths.data_folder(data)
    rid = request.get("request_id", "?")
    try:
        try:
            check_request(request)
        except DecodeError as err:
            raise ExchangeFailed(f"invalid_request: {err}") from None
        budget_s = (request["hard_deadline_ms"] - time.time_ns() // 1_000_000) / 1000
        deadline = time.monotonic() + budget_s
        if budget_s <= 0:
            raise ExchangeFailed("deadline_passed: before sending")
        value = exchange(paths.events_socket(folder), dict(request), deadline, data=folder, start=start)
        try:
            reply = check_reply(value)
        except DecodeError as err:
            raise ExchangeFailed(f"bad_reply: {err.code}") from None
        if reply["request_id"] != rid:
            raise ExchangeFailed(f"bad_reply: {reply['reason']} for request {reply['request_id']}")
        return reply
    except ExchangeFailed as why:
        _log_failure(folder, rid, request.get("request_kind", "?"), str(why))
        return None


def ask(
    kind: str,
    payload: dict[str, Any],
    *,
    adapter: str,
    adapter_version: str,
    host_version: str,
    deadline_ms: int | None = None,
    data: str | os.PathLike[str] | None = None,
    start: bool = True,
) -> Reply | None:
    """Build one request (:func:`new_request`) and :func:`send` it: the reply, or ``None``."""
    return send(
        new_request(kind, payload, adapter=adapter, adapter_version=adapter_version,
                    host_version=host_version, deadline_ms=deadline_ms),
        data=data, start=start,
    )


def fail_open(request_id: str | None, why: str = "the live service did not answer") -> Reply:
    """The ``no_override`` a caller acts on when :func:`send` returned ``None``."""
    return make_reply(request_id, "no_override", "fail_open", why, source="fail_open")


def _log_failure(data: Path, request_id: Any, kind: Any, why: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    paths.append_log(data, f"{stamp} client fail_open request_id={str(request_id)[:128]} "
                           f"kind={str(kind)[:64]} cause={why}")


__all__ = ["DEFAULT_DEADLINE_MS", "ExchangeFailed", "ask", "exchange", "fail_open", "new_request", "send"]
