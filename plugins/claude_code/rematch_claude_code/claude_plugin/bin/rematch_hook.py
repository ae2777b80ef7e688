"""rematch's hook client for Claude Code: what every hook event runs, in a few milliseconds.

Run as ``<python> -S -I <this file> [HARNESS] [--data DIR]`` (``rematch hooks
install`` writes that command with absolute paths; the Claude Code plugin's
``bin/rematch-hook`` runs it with ``python3`` from ``PATH``). Without ``site``
and with nothing but built-in modules imported, the interpreter starts in
about the time of a bare ``python -S``: this file imports no rematch code,
no ``json`` package, not even ``socket`` (its ``enum`` import alone costs
milliseconds).

What it does:

1. reads the hook's payload from stdin (at most 64 MiB) and takes the time it
   started (the records' time);
2. sends it, as it is, inside an IPC v2 ``hook_event`` request (docs/ipc-v2.md:
   a 4-byte big-endian length, then the request's JSON) to the resident
   service of the data folder (``rematch serve``), which owns the parsing, the
   verdict and the writing, and waits for its reply: the service answers once
   the event is committed to the session's files (``recorded``), or with the
   verdict of a ``PreToolUse`` (``deny``, after the call was recorded as
   ``tool_blocked``);
3. on a ``deny``, prints Claude Code's documented ``PreToolUse`` JSON output
   (``hookSpecificOutput.permissionDecision: "deny"`` and the reason) and
   nothing else; no other reply prints anything;
4. when no service answers (none runs, a payload the protocol cannot carry, a
   refusal, the deadline), starts one for the next events and captures this
   event in this process, exactly as ``rematch-hook`` does: it loads ``site``
   now and hands the payload to :func:`rematch_trace.live.hook_entry.capture_local`
   (or, when this interpreter has no rematch, to ``rematch-hook`` on ``PATH``).
   A ``PreToolUse`` waits for the service it started (up to its deadline) so
   that its verdict still applies.

It never gets in the way: stdout and stderr point at ``/dev/null`` from the
start (only a deny is written, to the saved stdout), the exit status is always
0, and any failure is one line in ``<data>/live/errors.log`` (never the
payload, which is never written anywhere).

The data folder is ``--data``, else ``$REMATCH_HOME``, else the platform's
user data folder as ``platformdirs`` computes it (``$XDG_DATA_HOME`` when
absolute, else ``~/.local/share``, then ``rematch``; on macOS ``~/Library/Application
Support/rematch``); the service's socket is ``<data>/run/events.sock``, or, when
that path is too long for a socket, ``rematch-<uid>-<16 hex>`` in
``$XDG_RUNTIME_DIR`` (else the temporary folder), or the first of its
``-1`` ... ``-7`` names that is free or ours when another user made it first,
as ``rematch_trace.live.paths`` computes it. Tests check that both agree.
``--where`` prints the two (for those tests and for people).

Keep this file to the standard library's built-in modules, and compatible with
any ``python3`` a user may have on ``PATH`` (3.8 and later).
"""

from __future__ import annotations

import _json
import _socket
import os
import sys
import time

#: The largest payload read from stdin (as the in-process capture).
MAX_PAYLOAD_BYTES = 64 << 20
#: IPC v2 bounds: a request's and a reply's payload, in bytes.
MAX_REQUEST_BYTES = 1 << 20
MAX_REPLY_BYTES = 16 << 10
#: How long a hook waits for the service, milliseconds (``REMATCH_IPC_DEADLINE_MS`` overrides).
DEADLINE_MS = 1500
#: Longest socket path used inside the data folder (``rematch_trace.live.paths.MAX_SOCKET_PATH``).
MAX_SOCKET_PATH = 100
#: Names of the runtime folder tried in turn (``rematch_trace.live.paths.CANDIDATES``).
RUN_CANDIDATES = 8
#: Claude Code caps a hook's output strings at this many characters.
MAX_REASON_CHARS = 10_000
#: The error log is rotated past this size; a message is cut to this many characters.
ERROR_LOG_BYTES = 1 << 20
ERROR_MESSAGE_CHARS = 300
#: How often a PreToolUse polls for the service it has just started, seconds.
POLL_S = 0.01


class _NoService(Exception):
    """Nothing listens on the socket (none runs, or a stale socket)."""


class _Failed(Exception):
    """The exchange with the service failed; the message says how (never with payload text)."""


class _Reset(_Failed):
    """The service closed or reset the connection before replying (it may be stopping as we connect)."""


# --- where things are ------------------------------------------------------------------------


def _home() -> str:
    home = os.environ.get("HOME", "")
    if home.startswith("/"):
        return home
    import pwd  # rare: no usable HOME

    return pwd.getpwuid(os.getuid()).pw_dir


def default_data_dir() -> str:
    """The platform's user data folder for rematch, as ``platformdirs.user_data_dir("rematch")`` gives it."""
    xdg = os.environ.get("XDG_DATA_HOME", "")
    if xdg.startswith("/"):
        base = xdg
    elif sys.platform == "darwin":
        base = _home().rstrip("/") + "/Library/Application Support"
    else:
        base = _home().rstrip("/") + "/.local/share"
    return os.path.join(base, "rematch")


def data_folder(explicit: str | None) -> str:
    """``--data``, else ``$REMATCH_HOME``, else :func:`default_data_dir`; absolute."""
    path = explicit or os.environ.get("REMATCH_HOME") or ""
    path = os.path.expanduser(path) if path else default_data_dir()
    return os.path.abspath(path)


def run_dir(data: str) -> str:
    """The service's private folder (``rematch_trace.live.paths.run_dir``)."""
    inside = os.path.join(data, "run")
    if len(os.fsencode(os.path.abspath(os.path.join(inside, "control.sock")))) <= MAX_SOCKET_PATH:
        return inside
    import hashlib  # only for long folder paths, as the service does
    import tempfile

    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    stem = os.path.join(base, f"rematch-{os.getuid()}-{hashlib.sha256(os.fsencode(os.path.realpath(data))).hexdigest()[:16]}")
    # The same walk as the service: a name another user made first (or a link) is passed over for the next.
    names = [stem] + [f"{stem}-{i}" for i in range(1, RUN_CANDIDATES)]
    for name in names:
        try:
            st = os.lstat(name)
        except FileNotFoundError:
            return name
        except OSError:
            continue
        if (st.st_mode & 0o170000) == 0o040000 and st.st_uid == os.getuid():
            return name
    return names[0]


def _private(folder: str) -> bool:
    """Whether ``folder`` is a real folder of this user that no one else can enter (the service's)."""
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return (st.st_mode & 0o170000) == 0o040000 and st.st_uid == os.getuid() and st.st_mode & 0o077 == 0


# --- the error log ---------------------------------------------------------------------------


def log_error(data: str, harness: str, message: str) -> None:
    """One line in ``<data>/live/errors.log`` (``rematch_trace.live.folder.log_error``'s format); never raises."""
    try:
        live = os.path.join(data, "live")
        os.makedirs(live, mode=0o700, exist_ok=True)
        if os.path.islink(live):
            return
        path = os.path.join(live, "errors.log")
        try:
            if os.stat(path).st_size > ERROR_LOG_BYTES:
                os.replace(path, path + ".1")
        except FileNotFoundError:
            pass
        line = " ".join(str(message).split())[:ERROR_MESSAGE_CHARS]
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            os.write(fd, f"{stamp} rematch_hook {harness}: {line}\n".encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except Exception:  # logging is best effort: the hook must exit 0
        pass


# --- the exchange ----------------------------------------------------------------------------


class _ScanContext:
    """What ``_json.make_scanner`` reads: the ``json`` package's defaults, without importing it (and ``re``)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name: str) -> float:
        raise ValueError(f"{name} is not JSON")


def _decode(payload: bytes) -> object:
    text = payload.decode("utf-8")
    try:
        value, end = _json.make_scanner(_ScanContext())(text, 0)  # type: ignore[arg-type]
    except StopIteration:
        raise _Failed("bad_reply: not JSON") from None
    if text[end:].strip():
        raise _Failed("bad_reply: bytes after the JSON value")
    return value


def request_frame(harness: str, raw: bytes, t: int, budget_ms: int) -> bytes | None:
    """The framed ``hook_event`` request carrying ``raw`` as ``host_payload``; ``None`` past the bound.

    The payload is spliced in as it came: the service checks it with the
    codec's rules (one JSON object, bounds, no duplicate key), so a payload
    that is not an object cannot make another request of it.
    """
    body = raw.strip()
    if not body.startswith(b"{") or not body.endswith(b"}"):
        return None
    rid, nonce, adapter = os.urandom(12).hex(), os.urandom(16).hex(), _json.encode_basestring_ascii(harness)
    head = (
        f'{{"protocol_version":2,"request_id":"{rid}","request_kind":"hook_event","adapter":{adapter},'
        f'"adapter_version":"1","received_at_ms":{t},"hard_deadline_ms":{t + budget_ms},"host_version":"unknown",'
        f'"invocation_nonce":"{nonce}","host_payload":'
    )
    payload = head.encode() + body + b"}"
    if len(payload) > MAX_REQUEST_BYTES:
        return None
    return len(payload).to_bytes(4, "big") + payload


def _recv_exact(sock: _socket.socket, n: int, deadline: float) -> bytes:
    buf = b""
    while len(buf) < n:
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        try:
            chunk = sock.recv(n - len(buf))
        except _socket.timeout:
            raise _Failed(f"read_deadline: {len(buf)} of {n} bytes") from None
        if not chunk:
            raise _Reset("closed: the service closed the connection without a reply")
        buf += chunk
    return buf


def exchange(sock_path: str, frame: bytes, deadline: float) -> dict[str, object]:
    """Send one request frame, return the reply object.

    :raises _NoService: nothing listens at ``sock_path``.
    :raises _Failed: anything else short of one bounded reply object before ``deadline``.
    """
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        try:
            sock.connect(sock_path)
        except (FileNotFoundError, ConnectionRefusedError):
            raise _NoService() from None
        except OSError as err:
            raise _Failed(f"connect_failed: {type(err).__name__}") from None
        try:
            sock.sendall(frame)
            n = int.from_bytes(_recv_exact(sock, 4, deadline), "big")
            if n > MAX_REPLY_BYTES:
                raise _Failed(f"bad_reply: frame_too_long ({n} bytes)")
            reply = _decode(_recv_exact(sock, n, deadline))
        except (ConnectionResetError, BrokenPipeError) as err:
            raise _Reset(f"exchange_failed: {type(err).__name__}") from None
        except OSError as err:
            raise _Failed(f"exchange_failed: {type(err).__name__}") from None
        except UnicodeDecodeError:
            raise _Failed("bad_reply: invalid_utf8") from None
    finally:
        sock.close()
    if type(reply) is not dict:
        raise _Failed("bad_reply: not an object")
    return reply


def start_service(data: str) -> None:
    """Start ``rematch serve`` for ``data`` with this interpreter, in its own session (rare: imports subprocess)."""
    import subprocess

    subprocess.Popen(
        [sys.executable, "-m", "rematch_trace.live.service", "--data", data, "--quiet"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True,
    )


def _budget_ms() -> int:
    text = os.environ.get("REMATCH_IPC_DEADLINE_MS", "")
    return int(text) if text.isdigit() and 0 < int(text) <= 600_000 else DEADLINE_MS


def ask_service(harness: str, raw: bytes, t: int, data: str, wait: bool) -> tuple[dict[str, object] | None, str]:
    """The service's reply to this event, or ``None`` and why (``no_service`` when none listens).

    ``wait``: a service was just started; poll for it until the deadline.
    """
    budget = _budget_ms()
    frame = request_frame(harness, raw, t, budget)
    if frame is None:
        return None, "unsendable: not an object the protocol carries, or over 1 MiB"
    run = run_dir(data)
    if not _private(run):
        return None, "no_service: no private service folder"
    deadline = time.monotonic() + max(0.0, (t + budget) / 1000 - time.time())
    retried = False
    while True:
        try:
            reply = exchange(os.path.join(run, "events.sock"), frame, deadline)
            break
        except _NoService:
            if not wait or time.monotonic() + POLL_S >= deadline:
                return None, "no_service"
            time.sleep(POLL_S)
        except _Reset as why:
            # A service stopping (idle) as we connected: once more, the same request (the service
            # answers a repeated request id with its first reply, so nothing is applied twice).
            if retried or time.monotonic() + POLL_S >= deadline:
                return None, str(why)
            retried = True  # (gone by then: "no_service", and the caller starts another)
        except _Failed as why:
            return None, str(why)
    if reply.get("decision_source") == "protocol_error":
        # The request broke a bound of the protocol (a large Write's text, say): expected, not an error.
        return None, f"refused: {reply.get('reason')!s:.64}"
    rid = frame[4:].split(b'"request_id":"', 1)[1][:24].decode()
    if reply.get("request_id") != rid:
        return None, f"bad_reply: {reply.get('reason')!s:.64}"
    return reply, ""


def taken(reply: dict[str, object]) -> bool:
    """Whether the service took the event: it says ``recorded``, or denies the call (recorded first)."""
    return reply.get("reason") == "recorded" or (
        reply.get("decision") == "deny" and reply.get("decision_source") not in ("protocol_error", "fail_open")
    )


def deny_output(reply: dict[str, object]) -> bytes:
    """Claude Code's PreToolUse JSON output that denies the call, with the service's reason."""
    explanation = str(reply.get("explanation") or "denied by rematch's policy")
    reason = f"rematch: {explanation} ({reply.get('reason')!s:.64}"
    incident = reply.get("incident_id")
    reason += f", incident {incident!s:.64})" if incident else ")"
    text = _json.encode_basestring_ascii(reason[:MAX_REASON_CHARS])
    return ('{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny",'
            f'"permissionDecisionReason":{text}}}}}\n').encode()


# --- without the service ---------------------------------------------------------------------


def _which(name: str) -> str | None:
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        path = os.path.join(folder or ".", name)
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    return None


_SITE_LOADED: list[bool] = []


def with_rematch() -> bool:
    """Load ``site`` (skipped at start for speed) and say whether this interpreter has rematch."""
    if sys.flags.no_site and not _SITE_LOADED:
        import site

        site.main()
        _SITE_LOADED.append(True)
    try:
        import rematch_trace.live.hook_entry  # noqa: F401
    except ImportError:
        return False
    return True


def capture_here(harness: str, raw: bytes, t: int, data: str) -> None:
    """Capture the event in this process (``rematch-hook``'s path), or through ``rematch-hook`` on ``PATH``."""
    if with_rematch():
        from pathlib import Path

        from rematch_trace.live.hook_entry import capture_local

        capture_local(harness, raw, t, Path(data))
        return
    exe = _which("rematch-hook")
    if exe is None:
        log_error(data, harness, f"{sys.executable} has no rematch_trace and no rematch-hook is on PATH; event lost")
        return
    import subprocess

    env = dict(os.environ, REMATCH_LIVE_SERVICE="0")
    subprocess.run([exe, harness, "--out", data], input=raw, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=60, check=False)


# --- the command -----------------------------------------------------------------------------


def parse_args(argv: list[str]) -> tuple[str, str | None, bool]:
    """(harness, ``--data`` folder or ``None``, ``--where``); ``--out`` is read as ``--data``."""
    harness = "claude_code"
    data: str | None = None
    where = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("--data", "--out"):
            data = argv[i + 1] if i + 1 < len(argv) else None
            i += 1
        elif arg.startswith(("--data=", "--out=")):
            data = arg.split("=", 1)[1]
        elif arg == "--where":
            where = True
        elif not arg.startswith("-"):
            harness = arg
        i += 1
    return harness, data, where


def _silence() -> int:
    """Point fds 1 and 2 at /dev/null; return a copy of the real stdout (for a deny only)."""
    out = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    return out


def main(argv: list[str]) -> int:
    """Handle one hook event; always 0."""
    t = time.time_ns() // 1_000_000
    harness, explicit, where = parse_args(argv)
    if where:
        data = data_folder(explicit)
        print(f"{data}\n{os.path.join(run_dir(data), 'events.sock')}")
        return 0
    out = _silence()
    data = ""
    try:
        data = data_folder(explicit)
        raw = sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)
        why = "service off (REMATCH_LIVE_SERVICE=0)"
        if os.environ.get("REMATCH_LIVE_SERVICE", "1") != "0":
            reply, why = ask_service(harness, raw, t, data, wait=False)
            if why.startswith("no_service") and with_rematch():
                start_service(data)
                # A call's verdict is worth waiting for; any other event is captured here at once.
                if b'"PreToolUse"' in raw:
                    reply, why = ask_service(harness, raw, t, data, wait=True)
            if reply is not None and taken(reply):
                if reply.get("decision") == "deny":
                    os.write(out, deny_output(reply))
                return 0
            if reply is not None:
                log_error(data, harness, f"captured in-process: the service answered {reply.get('reason')!s:.64}")
        if why.startswith(("connect_failed", "exchange_failed", "read_deadline", "closed", "bad_reply")):
            log_error(data, harness, f"captured in-process: {why}")
        capture_here(harness, raw, t, data)
    except BaseException as err:  # fail open: the session goes on whatever happened here
        if data:
            log_error(data, harness, type(err).__name__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
