"""A warm ``rematch`` for the tests: each command a real process, without paying Python's start-up.

Most tests run the real ``rematch`` command as a subprocess and look at what it did, not at how the
process started; yet that start (the interpreter, then every module of the core and the plugins)
is most of what such a test costs: about 0.3 s of CPU a command, against 0.02 s for a small import
itself. So each pytest worker keeps one *fork server*: a process that imported the core and the
plugins once (no plugin registered, nothing called) and forks a fresh child for each command.

A command runs as ``python -S -I rematch_fork_client.py SOCKET ARGS...`` (:data:`CLIENT`): the client
hands the server its argv, environment, working folder, umask, resource limits and its stdin,
stdout and stderr (``SCM_RIGHTS``); the server forks; the fork forks the command's process, which
takes those, calls ``rematch_trace.cli.main`` as the console script does and exits as Python exits
(threads joined, ``atexit`` run); its exit status comes back as the client's. A signal the client
gets is passed on to the command; a client that dies (a test's SIGKILL, a timeout) takes the
command with it.

What differs from a fresh process: the command is not the client's child (its pid, process group and
session are the server's), and its modules were imported before its environment was set (none of
the core reads the environment at import time). Hence ``tests/conftest.py`` sends a command here
only when neither matters: see :func:`tests.conftest._forkable`.
"""

from __future__ import annotations

import atexit
import importlib
import io
import json
import os
import pkgutil
import resource
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
#: The client's script: run with ``-S -I`` it starts in a few milliseconds.
CLIENT = os.path.join(HERE, "rematch_fork_client.py")
#: The packages imported before the first fork (every module of each, bar :data:`SKIP`).
PACKAGES = ("rematch_trace", "rematch_claude_code", "rematch_codex", "rematch_omp", "rematch_gemini_cli",
            "rematch_opencode", "rematch_toy")
#: Modules not imported ahead: scripts run as files, and the cluster (Dask, heavy and rarely used).
SKIP = ("rematch_hook", "__main__", "cluster")


def _warm() -> None:
    """Import what a command would: the CLI, then every module of :data:`PACKAGES` that imports cleanly."""
    importlib.import_module("rematch_trace.cli")
    for top in PACKAGES:
        try:
            pkg = importlib.import_module(top)
        except Exception:
            continue
        for info in pkgutil.walk_packages(getattr(pkg, "__path__", []), top + "."):
            if any(part in info.name.split(".") for part in SKIP):
                continue
            try:
                importlib.import_module(info.name)
            except Exception:  # a module that needs what is not installed: the command imports it, or not
                continue


def _recv_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    head, fds, _flags, _addr = socket.recv_fds(conn, 4, 3)
    (size,) = struct.unpack("!I", head)
    body = b""
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise ConnectionError("the client went away")
        body += chunk
    return json.loads(body), list(fds)


def _stdio(env: dict[str, str]) -> None:
    """Fresh text streams on fds 0 to 2, encoded as a Python started with ``env`` would."""
    coded = env.get("PYTHONIOENCODING", "")
    encoding, _, errors = coded.partition(":")
    locale = env.get("LC_ALL") or env.get("LC_CTYPE") or env.get("LANG") or "C"
    c_locale = locale in ("C", "POSIX")
    encoding = encoding or "utf-8"
    errors = errors or ("surrogateescape" if c_locale else "strict")
    unbuffered = bool(env.get("PYTHONUNBUFFERED"))

    def stream(fd: int, mode: str, err: str) -> io.TextIOWrapper:
        tty = os.isatty(fd)
        raw = io.FileIO(fd, mode, closefd=False)
        buf: Any = raw if (unbuffered and mode == "w") else (io.BufferedReader(raw) if mode == "r"
                                                              else io.BufferedWriter(raw))
        return io.TextIOWrapper(buf, encoding=encoding, errors=err, line_buffering=tty or (mode == "w" and fd == 2),
                                write_through=unbuffered and mode == "w")

    sys.stdin = sys.__stdin__ = stream(0, "r", errors)
    sys.stdout = sys.__stdout__ = stream(1, "w", errors)
    sys.stderr = sys.__stderr__ = stream(2, "w", "backslashreplace")


def _run_command(req: dict[str, Any], fds: list[int]) -> None:
    """In the command's process: take the client's stdio, folder, environment and limits; run; exit."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        if fd > 2:
            os.close(fd)
    os.chdir(req["cwd"])
    os.umask(req["umask"])
    for name, (soft, hard) in req["rlimits"].items():
        try:
            resource.setrlimit(getattr(resource, name), (soft, hard))
        except (ValueError, OSError):
            pass
    os.environ.clear()
    os.environ.update(req["env"])
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as Python sets it at start-up
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _stdio(req["env"])
    sys.argv = ["rematch", *req["args"]]
    sys.path[0] = ""  # as ``python -c``: the working folder first, not this file's
    code = 0
    try:
        from rematch_trace.cli import main

        main()
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        code = 128 + signal.SIGINT
    except BaseException:
        traceback.print_exc()
        code = 1
    # What the interpreter does on its way out: wait for threads, run atexit, flush.
    try:
        threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    except BaseException:
        traceback.print_exc()
    os._exit(code & 0xFF)


def _serve_one(conn: socket.socket, listener: socket.socket) -> None:
    """In the fork that minds one command: fork it, pass the client's signals on, report its status."""
    listener.close()
    try:
        req, fds = _recv_request(conn)
    except (OSError, ValueError, ConnectionError):
        os._exit(0)
    pid = os.fork()
    if pid == 0:
        conn.close()
        _run_command(req, fds)
    for fd in fds:
        os.close(fd)
    conn.sendall(struct.pack("!i", pid))
    pidfd = os.pidfd_open(pid)
    status = None
    while status is None:
        ready, _, _ = select.select([conn, pidfd], [], [])
        if pidfd in ready:
            _, raw = os.waitpid(pid, 0)
            status = os.waitstatus_to_exitcode(raw)
            break
        data = conn.recv(4)
        if len(data) < 4:  # the client died or was killed: so does its command
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            os._exit(0)
        (sig,) = struct.unpack("!i", data)
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    try:
        conn.sendall(struct.pack("!i", status))
    except OSError:
        pass
    os._exit(0)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def serve(path: str) -> None:
    """Warm up, listen on ``path``, fork per connection until stdin closes (the pytest worker ended)."""
    _warm()
    if threading.active_count() != 1:  # forking a process with threads is not safe: serve nothing
        return
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    print("ready", flush=True)
    while True:
        ready, _, _ = select.select([listener, sys.stdin], [], [], 0.5)
        _reap()  # waited for, each fork's time (and its command's) counts as this process's children's
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 1 << 12):
            break
        if listener in ready:
            conn, _ = listener.accept()
            if os.fork() == 0:
                _serve_one(conn, listener)
            conn.close()
    # Each fork still minding a command: waited for, so that its time is counted before the server exits.
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return


# --- in the pytest worker -----------------------------------------------------------------------

#: How the tests spell the ``rematch`` command: the console script, ``-m``, and the console script's
#: own two lines given to ``-c``.
_MAIN = "import sys; from rematch_trace.cli import main; sys.argv[0] = 'rematch'; main()"
_SCRIPT = os.path.join(os.path.dirname(sys.executable), "rematch")
#: Commands that run until stopped (their process is what such a test watches): never forked.
LONG_RUNNING = frozenset({"serve", "watch"})
#: Popen's arguments that make the process itself what is tested (its session, its group, what runs
#: in it first): a command given any of them runs as a plain subprocess.
_PROCESS_KWARGS = ("preexec_fn", "start_new_session", "process_group", "pass_fds", "user", "group",
                   "extra_groups", "executable", "shell")

#: The ``PYTHON*`` variables the fork takes as a fresh interpreter would; any other is read at start-up.
_RUNTIME_ONLY = frozenset({"PYTHONIOENCODING", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE"})
_server: subprocess.Popen[bytes] | None = None
#: The start-up ``PYTHON*`` variables the server's interpreter began with.
_server_vars: dict[str, str] = {}
_socket = ""
#: Whether the running test may have its commands forked (given by tests/conftest.py).
_enabled: Callable[[], bool] = bool  # nothing forked until install() says when


def _command(args: Any) -> list[str] | None:
    """The ``rematch`` arguments of ``args`` when it runs the ``rematch`` command, else ``None``."""
    if not isinstance(args, (list, tuple)) or not args or not all(isinstance(a, str) for a in args):
        return None
    if args[0] == _SCRIPT:
        return list(args[1:])
    if args[0] == sys.executable and len(args) >= 3 and (
            (args[1] == "-m" and args[2] == "rematch_trace.cli") or (args[1] == "-c" and args[2] == _MAIN)):
        return list(args[3:])
    return None


def _tty(stream: Any, fd: int) -> bool:
    if stream is None:
        return os.isatty(fd)
    if isinstance(stream, int):
        return stream >= 0 and os.isatty(stream)
    fileno = getattr(stream, "fileno", None)
    try:
        return fileno is not None and os.isatty(fileno())
    except (OSError, ValueError):
        return False


def forkable(args: Any, kwargs: dict[str, Any]) -> list[str] | None:
    """The client's argv for ``Popen(args, **kwargs)`` when it may run in the fork server, else ``None``."""
    if os.environ.get("REMATCH_TEST_FORK") == "0" or not hasattr(os, "pidfd_open") or not _enabled():
        return None
    rest = _command(args)
    if rest is None or any(kwargs.get(k) for k in _PROCESS_KWARGS):
        return None
    first = next((a for a in rest if not a.startswith("-")), "")
    if first in LONG_RUNNING:
        return None
    if any(_tty(kwargs.get(name), fd) for fd, name in enumerate(("stdin", "stdout", "stderr"))):
        return None
    if not _start():
        return None
    env = kwargs.get("env")
    if _startup_vars(os.environ if env is None else env) != _server_vars:
        return None  # a variable read at start-up (a path, a mode) the server did not start with
    return [sys.executable, "-S", "-I", CLIENT, _socket, *rest]


def _startup_vars(env: Any) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith("PYTHON") and k not in _RUNTIME_ONLY}


def _start() -> bool:
    """The worker's fork server, started on first use; ``False`` when it could not start."""
    global _server, _socket, _server_vars
    if _server is not None:
        return _server.poll() is None
    _server_vars = _startup_vars(os.environ)
    folder = tempfile.mkdtemp(prefix="rmf-")
    _socket = os.path.join(folder, "s")
    _server = subprocess.Popen(  # not forked itself: no rematch argv
        [sys.executable, os.path.abspath(__file__), _socket], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert _server.stdout is not None
    if _server.stdout.readline() != b"ready\n":
        _server.wait()
        return False
    atexit.register(_stop)
    return True


def _stop() -> None:
    if _server is not None and _server.poll() is None:
        assert _server.stdin is not None
        _server.stdin.close()
        try:
            _server.wait(10)
        except subprocess.TimeoutExpired:
            _server.kill()


_ORIGINAL_INIT = subprocess.Popen.__init__


def install(enabled: Callable[[], bool]) -> None:
    """Route forkable ``rematch`` commands of this process's ``subprocess`` calls to the fork server
    while ``enabled()`` says so (``REMATCH_TEST_FORK=0`` never)."""
    global _enabled
    _enabled = enabled

    def init(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        forked = forkable(args, kwargs) if not rest else None
        _ORIGINAL_INIT(self, forked or args, *rest, **kwargs)

    subprocess.Popen.__init__ = init  # type: ignore[method-assign]


__all__ = ["CLIENT", "forkable", "install", "serve"]

if __name__ == "__main__":
    serve(sys.argv[1])
