"""The client of :mod:`rematch_fork`: ``python -S -I rematch_fork_client.py SOCKET ARGS...`` runs
``rematch ARGS...`` in the fork server's next fork, as this process: its stdin, stdout, stderr,
environment, folder, umask and limits; the signals it gets; its exit status. Only the standard
library, imported in milliseconds. Without a server to answer, it runs ``rematch`` itself."""

import json
import os
import resource
import signal
import socket
import struct
import sys

RLIMITS = ("RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CPU", "RLIMIT_STACK",
           "RLIMIT_CORE", "RLIMIT_NPROC")
MAIN = "import sys; from rematch_trace.cli import main; sys.argv[0] = 'rematch'; main()"


def _read(conn, n):
    data = b""
    while len(data) < n:
        try:
            chunk = conn.recv(n - len(data))
        except InterruptedError:
            continue
        if not chunk:
            return None
        data += chunk
    return data


def main():
    path, args = sys.argv[1], sys.argv[2:]
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        body = json.dumps({"args": args, "env": dict(os.environ), "cwd": os.getcwd(), "umask": os.umask(0o022),
                           "rlimits": {n: resource.getrlimit(getattr(resource, n)) for n in RLIMITS}}).encode()
        socket.send_fds(conn, [struct.pack("!I", len(body))], [0, 1, 2])
        conn.sendall(body)
        pid = _read(conn, 4)
    except OSError:
        pid = None
    if pid is None:  # no server (or stdio closed): the command as the console script runs it
        conn.close()
        os.execv(sys.executable, [sys.executable, "-c", MAIN, *args])

    def forward(sig, _frame):
        conn.sendall(struct.pack("!i", sig))

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, forward)
    status = _read(conn, 4)
    if status is None:
        os._exit(1)
    (code,) = struct.unpack("!i", status)
    if code < 0:  # killed by a signal: so is this process
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)


main()
