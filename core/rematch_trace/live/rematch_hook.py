"""rematch's hook client for Claude Code and Codex: what every hook event runs, in a few milliseconds.

Run as ``<python> -S -I <this file> [HARNESS] [--data DIR]`` (``rematch hooks
install`` writes that command with absolute paths; the Claude Code and Codex
plugin folders carry a copy of this file, which their ``bin/rematch-hook`` runs
with ``python3`` from ``PATH``: :mod:`rematch_trace.live.harness_folder`). Without ``site``
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
3. on a ``deny``, prints the harness's documented ``PreToolUse`` JSON output
   (``hookSpecificOutput.permissionDecision: "deny"`` and the reason) and
   nothing else; no other reply prints anything;
4. when no service answers (none runs, a payload the protocol cannot carry, a
   refusal such as ``busy``, the deadline), starts one for the next events and
   judges and captures this event in this process, exactly as ``rematch-hook``
   does: it loads ``site`` now and hands the payload to
   :func:`rematch_trace.live.hook_entry.capture_local` (or, when this
   interpreter has no rematch, to ``rematch-hook`` on ``PATH``). A
   ``PreToolUse`` is judged by the service's own rules over the payload read
   whole (docs/ipc-v2.md, "When the service cannot answer"): a deny is printed
   as in 3 and the call captured as ``tool_blocked``. A ``PreToolUse`` first
   waits for the service it started (up to its deadline).

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
#: How long a hook waits for the service, milliseconds (``REMATCH_IPC_DEADLINE_MS`` overrides;
#: ``--deadline-ms=N``, which ``rematch hooks install`` writes on the PreToolUse command so that a
#: held call can wait for a person, overrides both).
DEADLINE_MS = 1500
#: The longest budget taken: IPC v2's longest span from a request's receipt to its hard deadline.
MAX_DEADLINE_MS = 600_000
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
#: Backoff between two tries of a busy service (EAGAIN at connect, a ``busy`` reply, a connection
#: closed before any reply): the first pause and the longest, each jittered (as the core client).
BACKOFF_FIRST_S = 0.005
BACKOFF_MAX_S = 0.1


class _NoService(Exception):
    """Nothing listens on the socket (none runs, or a stale socket)."""


class _Failed(Exception):
    """The exchange with the service failed; the message says how (never with payload text)."""


class _Reset(_Failed):
    """The service closed or reset the connection before replying (it may be stopping as we connect)."""


class _Busy(_Failed):
    """The service's listen queue is full (``EAGAIN`` at connect): a burst; try again shortly."""


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


# The reply check. A reply is decoded with the same rules as the service's codec
# (``rematch_trace.live.ipc.codec.decode_payload`` with the 16 KiB reply bound) and checked
# as ``messages.check_reply`` checks it, with built-in modules only: importing the codec
# would load ``json``, ``re``, ``decimal``, ``socket`` (22-34 ms cumulative under load, measured with -X importtime). Any fault is a
# ``bad_reply`` and the hook fails open: a deny that breaks the contract is never printed
# (issue 28). tests/capture/test_hook_reply.py feeds the same bytes to both sides and
# requires the same answer.

#: IPC v2 decoding bounds (``rematch_trace.live.ipc.codec``). A literal cannot outgrow the
#: 64 KiB string bound inside a 16 KiB reply, so that bound needs no check here.
MAX_DEPTH = 32
MAX_MEMBERS = 1024
MAX_ELEMENTS = 2048
MAX_EXACT_INT = 2**53 - 1
MAX_EXPLANATION = 1024
_JSON_SPACE = " \t\n\r"
_DIGITS = "0123456789"
_LOWER = "abcdefghijklmnopqrstuvwxyz"
_ALNUM = _DIGITS + _LOWER + _LOWER.upper()
#: ``messages._REPLY_SPEC``'s domains.
_DECISIONS = ("no_override", "deny")
_DECISION_SOURCES = ("local_rules", "demo_provider", "model_provider", "approval", "service", "protocol_error",
                     "fail_open")
_TOOL_CLASSES = ("shell_exec", "file_read", "file_write", "file_edit", "network", "mcp", "subagent", "other",
                 "unknown")
_REPLY_FIELDS = ("protocol_version", "request_id", "decision", "reason", "explanation", "incident_id",
                 "decision_source", "tool_class", "execution_observed")


class _BadReply(ValueError):
    """A reply that breaks the IPC v2 contract; ``code`` is the codec's or the message check's."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


def _decimal(text: str) -> tuple[str, int, int]:
    """``text`` (a JSON number or a float's repr) as (signed significant digits, exponent, adjusted exponent).

    Two numbers are equal exactly when their first two items are; the third is
    ``decimal.Decimal(text).adjusted()``.
    """
    sign = "-" if text.startswith("-") else ""
    mantissa, _, exp = text.lstrip("+-").lower().partition("e")
    whole, _, frac = mantissa.partition(".")
    exponent = int(exp or "0") - len(frac)
    coefficient = (whole + frac).lstrip("0")
    adjusted = exponent + max(1, len(coefficient)) - 1
    if not coefficient:
        return "", 0, adjusted
    digits = coefficient.rstrip("0")
    return sign + digits, exponent + len(coefficient) - len(digits), adjusted


class _ScanContext:
    """What ``_json.make_scanner`` reads, with the codec's hooks (no ``json`` package import)."""

    strict = True
    object_hook = None

    @staticmethod
    def object_pairs_hook(pairs: list[tuple[str, object]]) -> dict[str, object]:
        if len(pairs) > MAX_MEMBERS:
            raise _BadReply("too_many_members", f"{len(pairs)} members")
        out = dict(pairs)
        if len(out) != len(pairs):
            raise _BadReply("duplicate_key", "a key appears twice in one object")
        return out

    @staticmethod
    def parse_int(text: str) -> int:
        if len(text) > 17 or abs(int(text)) > MAX_EXACT_INT:
            raise _BadReply("number_out_of_bounds", "an integer outside ±(2^53-1)")
        return int(text)

    @staticmethod
    def parse_float(text: str) -> float:
        # The codec's rule, without ``decimal``: the exact shortest spelling of a binary64 value.
        if len(text) > 40 or abs(_decimal(text)[2]) > 400:
            raise _BadReply("number_out_of_bounds", "a number outside binary64's digits or range")
        value = float(text)
        if value in (float("inf"), float("-inf")) or _decimal(repr(value))[:2] != _decimal(text)[:2]:
            raise _BadReply("number_out_of_bounds", "a number with no exact binary64 value")
        return value

    @staticmethod
    def parse_constant(name: str) -> float:
        raise _BadReply("invalid_json", f"{name} is not JSON")


def _walk(value: object, deadline: float | None) -> None:
    """Depth, array lengths and lone surrogates (the codec's scan and walk, on the built value).

    ``deadline`` (monotonic seconds) is checked every 4,096 values, as the codec does.
    """
    stack = [(value, 1)]
    steps = 0
    while stack:
        v, depth = stack.pop()
        steps += 1
        if deadline is not None and steps % 4096 == 0 and time.monotonic() > deadline:
            raise _BadReply("decode_deadline", "checking values")
        if type(v) is str:
            if not v.isascii():
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError:
                    raise _BadReply("invalid_utf8", "a lone surrogate") from None
        elif type(v) is list:
            if depth > MAX_DEPTH:
                raise _BadReply("too_deep", f"nesting deeper than {MAX_DEPTH}")
            if len(v) > MAX_ELEMENTS:
                raise _BadReply("too_many_elements", f"{len(v)} elements")
            stack.extend((x, depth + 1) for x in v)
        elif type(v) is dict:
            if depth > MAX_DEPTH:
                raise _BadReply("too_deep", f"nesting deeper than {MAX_DEPTH}")
            for k, x in v.items():
                stack.append((k, depth + 1))
                stack.append((x, depth + 1))


def _decode(payload: bytes, deadline: float | None = None) -> object:
    """One JSON value from a reply payload, with the codec's rules; :class:`_BadReply` otherwise.

    Linear in the payload (at most 16 KiB): ``_json``'s scanner, then one walk.
    """
    if len(payload) > MAX_REPLY_BYTES:
        raise _BadReply("frame_too_long", f"{len(payload)} bytes")
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        raise _BadReply("invalid_utf8", "not UTF-8") from None
    start = len(text) - len(text.lstrip(_JSON_SPACE))
    try:
        value, end = _json.make_scanner(_ScanContext())(text, start)  # type: ignore[arg-type]
    except StopIteration:
        raise _BadReply("invalid_json", "not JSON") from None
    except RecursionError:
        raise _BadReply("too_deep", "nesting too deep") from None
    except ValueError as err:  # the scanner's own errors (bad escapes, control characters)
        if isinstance(err, _BadReply):
            raise
        raise _BadReply("invalid_json", type(err).__name__) from None
    if text[end:].strip(_JSON_SPACE):
        raise _BadReply("invalid_json", "bytes after the JSON value")
    _walk(value, deadline)
    return value


def _word(v: object, first: str, rest: str, longest: int) -> bool:
    """Whether ``v`` is a string of 1..``longest`` characters, the first in ``first``, the others in ``rest``."""
    return (type(v) is str and 0 < len(v) <= longest and v[0] in first  # type: ignore[arg-type]
            and all(c in rest for c in v[1:]))  # type: ignore[index]


def check_reply(obj: object) -> dict[str, object]:
    """``obj`` as a v2 reply, checked as ``rematch_trace.live.ipc.messages.check_reply`` does; :class:`_BadReply` otherwise."""
    if type(obj) is not dict:
        raise _BadReply("wrong_type", "a reply must be a JSON object")
    rep: dict[str, object] = obj  # type: ignore[assignment]
    if "protocol_version" in rep:
        v = rep["protocol_version"]
        if type(v) is not int:
            raise _BadReply("wrong_type", "protocol_version")
        if v != 2:
            raise _BadReply("unsupported_version", f"protocol_version {v}")
    for k in rep:
        if k not in _REPLY_FIELDS:
            raise _BadReply("unexpected_field", f"{k[:64]!r}")
    for k in _REPLY_FIELDS:
        if k not in rep:
            raise _BadReply("missing_field", k)
    ident, reason, incident = rep["request_id"], rep["reason"], rep["incident_id"]
    checks = (
        ("request_id", ident is None or _word(ident, _ALNUM, _ALNUM + "._:-", 128)),
        ("decision", rep["decision"] in _DECISIONS and type(rep["decision"]) is str),
        ("reason", _word(reason, _DIGITS + _LOWER, _DIGITS + _LOWER + "_.:-", 64)),
        ("explanation", type(rep["explanation"]) is str and len(rep["explanation"]) <= MAX_EXPLANATION),  # type: ignore[arg-type]
        ("incident_id", incident is None or _word(incident, _ALNUM, _ALNUM + "._:-", 64)),
        ("decision_source", rep["decision_source"] in _DECISION_SOURCES and type(rep["decision_source"]) is str),
        ("tool_class", rep["tool_class"] in _TOOL_CLASSES and type(rep["tool_class"]) is str),
        ("execution_observed", rep["execution_observed"] == "unknown" and type(rep["execution_observed"]) is str),
    )
    for field, ok in checks:
        if not ok:
            raise _BadReply("invalid_value", field)
    if ident is None and rep["decision_source"] != "protocol_error":
        raise _BadReply("invalid_value", "request_id: null only in a protocol_error reply")
    return rep


def decode_reply(payload: bytes, deadline: float | None = None) -> dict[str, object]:
    """A reply payload decoded and checked; ``_Failed("bad_reply: <code>: ...")`` for any fault."""
    try:
        return check_reply(_decode(payload, deadline))
    except _BadReply as err:
        raise _Failed(f"bad_reply: {err}") from None


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


def _lock_holders(lock: str) -> set[int]:
    """The pids holding a ``flock`` on ``lock`` (``/proc/locks``; ``service_identity.lock_holders``)."""
    try:
        st = os.stat(lock)
        with open("/proc/locks", "rb") as f:
            text = f.read(1 << 22)
    except OSError:
        return set()
    want = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    found = set()
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 6 or fields[1] != b"FLOCK":
            continue
        try:
            major, minor, ino = fields[5].split(b":")
            if (int(major, 16), int(minor, 16), int(ino)) == want:
                found.add(int(fields[4]))
        except ValueError:
            continue
    return found


def socket_problem(sock: _socket.socket, run: str) -> str | None:
    """Why the socket's process is not the running service of ``run`` (``service_identity.socket_problem``)."""
    raw = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    pid = int.from_bytes(raw[:4], sys.byteorder, signed=True)
    holders = _lock_holders(os.path.join(run, "serve.lock"))
    if pid not in holders:
        owner = ",".join(map(str, sorted(holders))) or "none"
        return f"untrusted_service: the socket's process {pid} does not hold the service's lock (held by {owner})"
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    if raw[raw.rfind(b")") + 2:][:1] in (b"T", b"t"):
        return f"service_paused: the service (pid {pid}) is stopped"
    return None


def exchange(sock_path: str, frame: bytes, deadline: float) -> dict[str, object]:
    """Send one request frame, return the reply object.

    :raises _NoService: nothing listens at ``sock_path``.
    :raises _Failed: anything else short of one reply that passes :func:`decode_reply` before ``deadline``.
    """
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        try:
            sock.connect(sock_path)
        except (FileNotFoundError, ConnectionRefusedError):
            raise _NoService() from None
        except BlockingIOError:
            raise _Busy("busy: EAGAIN at connect") from None
        except OSError as err:
            raise _Failed(f"connect_failed: {type(err).__name__}") from None
        # Another process answering on the socket (moved aside and replaced), or a stopped service, is
        # never believed: the call is judged here instead (docs/threat-model.md).
        why = socket_problem(sock, os.path.dirname(sock_path))
        if why is not None:
            raise _Failed(why)
        try:
            sock.sendall(frame)
            n = int.from_bytes(_recv_exact(sock, 4, deadline), "big")
            if n > MAX_REPLY_BYTES:
                raise _Failed(f"bad_reply: frame_too_long ({n} bytes)")
            payload = _recv_exact(sock, n, deadline)
        except (ConnectionResetError, BrokenPipeError) as err:
            raise _Reset(f"exchange_failed: {type(err).__name__}") from None
        except OSError as err:
            raise _Failed(f"exchange_failed: {type(err).__name__}") from None
    finally:
        sock.close()
    # Strict, as the service's codec and check_reply: a reply that breaks them is never acted on.
    return decode_reply(payload, deadline)


def start_service(data: str) -> None:
    """Start ``rematch serve`` for ``data`` with this interpreter, in its own session (rare: imports subprocess)."""
    import subprocess

    subprocess.Popen(
        [sys.executable, "-m", "rematch_trace.live.service", "--data", data, "--quiet"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True,
    )


def _budget_ms(explicit: int | None = None) -> int:
    """The IPC budget: ``--deadline-ms`` (the installed PreToolUse command's, a hold's wait), else
    ``REMATCH_IPC_DEADLINE_MS``, else :data:`DEADLINE_MS`."""
    if explicit is not None:
        return explicit
    text = os.environ.get("REMATCH_IPC_DEADLINE_MS", "")
    return int(text) if text.isdigit() and 0 < int(text) <= MAX_DEADLINE_MS else DEADLINE_MS


def ask_service(harness: str, raw: bytes, t: int, data: str, wait: bool,
                budget_ms: int | None = None) -> tuple[dict[str, object] | None, str]:
    """The service's reply to this event, or ``None`` and why (``no_service`` when none listens).

    ``wait``: a service was just started; poll for it, for at most :data:`DEADLINE_MS` (a long
    budget is a held call's wait for a person, not a reason to wait that long for a service
    that does not start). ``budget_ms``: see :func:`_budget_ms`.
    """
    budget = _budget_ms(budget_ms)
    frame = request_frame(harness, raw, t, budget)
    if frame is None:
        return None, "unsendable: not an object the protocol carries, or over 1 MiB"
    run = run_dir(data)
    if not _private(run):
        return None, "no_service: no private service folder"
    deadline = time.monotonic() + max(0.0, (t + budget) / 1000 - time.time())
    connect_by = min(deadline, time.monotonic() + DEADLINE_MS / 1000)
    delay = BACKOFF_FIRST_S
    while True:
        try:
            reply = exchange(os.path.join(run, "events.sock"), frame, deadline)
            if not (reply.get("decision_source") == "protocol_error" and reply.get("reason") == "busy"):
                break
            why = "busy: the service is at its connection bound"
        except _NoService:
            if not wait or time.monotonic() + POLL_S >= connect_by:
                return None, "no_service"
            time.sleep(POLL_S)
            continue
        except (_Busy, _Reset) as err:
            # A burst (the listen queue full), or a service stopping as we connected, or one that gave
            # this idle connection's slot to another: the same request again, after a jittered pause
            # (the service answers a repeated request id with its first reply: nothing applied twice).
            # A stopped service is "no_service" on the next try, and the caller starts another.
            why = str(err)
        except _Failed as err:
            return None, str(err)
        pause = delay * (0.5 + int.from_bytes(os.urandom(2), "big") / 65536)
        if time.monotonic() + pause >= deadline:
            return None, why
        time.sleep(pause)
        delay = min(delay * 2, BACKOFF_MAX_S)
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


#: Each harness's documented ``PreToolUse`` output that denies the call, ``{reason}`` being the
#: reason as a JSON string (Gemini CLI's ``BeforeTool`` is its ``PreToolUse``). Claude Code (docs: hooks,
#: "PreToolUse decision control") and Codex
#: (0.124+, developers.openai.com/codex/hooks: ``permissionDecision: "deny"``, the reason shown
#: to the model) read the same object; each is written here so one can change alone.
DENY_SHAPES = {
    "claude_code": ('{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny",'
                    '"permissionDecisionReason":{reason}}}\n'),
    "codex": ('{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny",'
              '"permissionDecisionReason":{reason}}}\n'),
    # Gemini CLI's BeforeTool (its hooks reference): ``decision: "deny"`` and the ``reason`` it
    # gives the model as the call's error; the turn goes on.
    "gemini_cli": '{"decision":"deny","reason":{reason}}\n',
    # rematch's opencode plugin reads this line and throws the reason in ``tool.execute.before``.
    "opencode": '{"decision":"deny","reason":{reason}}\n',
}


#: Each harness's documented ``PermissionRequest`` output that denies the request (the person is
#: not asked; the call does not run). Codex (0.124+; its hooks schema
#: ``permission-request.command.output``): ``hookSpecificOutput.decision.behavior: "deny"`` and a
#: ``message``. A harness not named here gets nothing printed (it asks its person as usual).
PERMISSION_DENY_SHAPES = {
    "codex": ('{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny",'
              '"message":{reason}}}}\n'),
}
#: The events whose payload the service judges (a verdict may deny it): a call before it runs, and
#: a harness asking its person to approve one.
JUDGED_EVENTS = (b'"PreToolUse"', b'"PermissionRequest"', b'"BeforeTool"')


class _PlainScan:
    """What ``_json.make_scanner`` reads to build plain values (the payload's event name only)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float


def event_name(raw: bytes) -> str:
    """The payload's top-level ``hook_event_name`` (``PreToolUse`` when it cannot be read).

    Read by parsing the object, never by searching its bytes: a tool input may hold the same key
    and value in a nested object (an attacker's text), which must not choose the deny's shape.
    Only a deny asks, so the parse costs nothing on the common path.
    """
    try:
        text = raw.decode("utf-8")
        start = len(text) - len(text.lstrip(_JSON_SPACE))
        value, _ = _json.make_scanner(_PlainScan())(text, start)  # type: ignore[arg-type]
    except Exception:  # any failure (not JSON, too deep...): the call's own event
        return "PreToolUse"
    name = value.get("hook_event_name") if type(value) is dict else None
    return name if type(name) is str else "PreToolUse"


def deny_output(reply: dict[str, object], harness: str = "claude_code", event: str = "PreToolUse") -> bytes:
    """The harness's output that denies the call, with the service's reason: for ``PreToolUse``
    (:data:`DENY_SHAPES`; Claude Code's for a harness it does not name), for ``PermissionRequest``
    (:data:`PERMISSION_DENY_SHAPES`; ``b""`` for a harness it does not name)."""
    explanation = str(reply.get("explanation") or "denied by rematch's policy")
    reason = f"rematch: {explanation} ({reply.get('reason')!s:.64}"
    incident = reply.get("incident_id")
    reason += f", incident {incident!s:.64})" if incident else ")"
    text = _json.encode_basestring_ascii(reason[:MAX_REASON_CHARS])
    if event == "PermissionRequest":
        shape = PERMISSION_DENY_SHAPES.get(harness, "")
    else:
        shape = DENY_SHAPES.get(harness, DENY_SHAPES["claude_code"])
    return shape.replace("{reason}", text).encode()


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


def capture_here(harness: str, raw: bytes, t: int, data: str, cause: str = "", out: int = -1) -> None:
    """Judge and capture the event in this process (``rematch-hook``'s path), or through ``rematch-hook`` on ``PATH``.

    No service answered (``cause`` says why): a ``PreToolUse`` is judged here by
    the service's own rules (``rematch_trace.live.verdicts.local``), and a deny
    is written to ``out`` (the saved stdout) before the call is captured as
    ``tool_blocked``. ``rematch-hook`` does the same and prints its deny, which
    is passed on.
    """
    def tell(reply: dict[str, object]) -> None:
        if out >= 0:
            os.write(out, deny_output(reply, harness, event_name(raw)))

    if with_rematch():
        from pathlib import Path

        from rematch_trace.live.hook_entry import capture_local

        capture_local(harness, raw, t, Path(data), cause, tell)
        return
    exe = _which("rematch-hook")
    if exe is None:
        log_error(data, harness, f"{sys.executable} has no rematch_trace and no rematch-hook is on PATH; event lost")
        return
    import subprocess

    # The service is not asked again (it did not take the event); the command's fallback log names why.
    # (``--out``: what every rematch-hook reads, an older one on PATH too.)
    env = dict(os.environ, REMATCH_LIVE_SERVICE="0", REMATCH_HOOK_CAUSE=cause[:200])
    done = subprocess.run([exe, harness, "--out", data], input=raw, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, timeout=60, check=False)
    if done.stdout and out >= 0:
        os.write(out, done.stdout[:MAX_REPLY_BYTES])  # its deny (it prints nothing else)


# --- the command -----------------------------------------------------------------------------


def _deadline_arg(text: str | None) -> int | None:
    """A ``--deadline-ms`` value: whole milliseconds within IPC v2's span, else ``None`` (ignored)."""
    return int(text) if text is not None and text.isdigit() and 0 < int(text) <= MAX_DEADLINE_MS else None


def parse_args(argv: list[str]) -> tuple[str, str | None, bool, int | None]:
    """(harness, ``--data`` folder or ``None``, ``--where``, ``--deadline-ms`` or ``None``);
    ``--out`` is read as ``--data``."""
    harness = "claude_code"
    data: str | None = None
    where = False
    deadline: int | None = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("--data", "--out"):
            data = argv[i + 1] if i + 1 < len(argv) else None
            i += 1
        elif arg.startswith(("--data=", "--out=")):
            data = arg.split("=", 1)[1]
        elif arg == "--deadline-ms":
            deadline = _deadline_arg(argv[i + 1] if i + 1 < len(argv) else None)
            i += 1
        elif arg.startswith("--deadline-ms="):
            deadline = _deadline_arg(arg.split("=", 1)[1])
        elif arg == "--where":
            where = True
        elif not arg.startswith("-"):
            harness = arg
        i += 1
    return harness, data, where, deadline


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
    harness, explicit, where, budget = parse_args(argv)
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
            reply, why = ask_service(harness, raw, t, data, wait=False, budget_ms=budget)
            if why.startswith("no_service") and with_rematch():
                start_service(data)
                # A call's verdict is worth waiting for; any other event is captured here at once.
                if any(name in raw for name in JUDGED_EVENTS):
                    reply, why = ask_service(harness, raw, t, data, wait=True, budget_ms=budget)
            if reply is not None and taken(reply):
                if reply.get("decision") == "deny":
                    os.write(out, deny_output(reply, harness, event_name(raw)))
                return 0
            if reply is not None:
                why = f"not taken: the service answered {reply.get('reason')!s:.64}"
                log_error(data, harness, f"captured in-process: {why}")
        if why.startswith(("connect_failed", "exchange_failed", "read_deadline", "closed", "bad_reply",
                           "untrusted_service", "service_paused")):
            log_error(data, harness, f"captured in-process: {why}")
        # No service answered: the call is judged here by the same rules (whatever its size, its
        # numbers, its nesting), and captured as the harness was told.
        capture_here(harness, raw, t, data, why, out)
    except BaseException as err:  # fail open: the session goes on whatever happened here
        if data:
            log_error(data, harness, type(err).__name__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
