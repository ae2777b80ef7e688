"""The client: fails open within its deadline (down, slow, garbage, mismatched), starts the service on demand."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson
import pytest
from live_helpers import clean_env, connectable, pre_tool_use, wait_for

from rematch_trace.live import client, paths
from rematch_trace.live.ipc.codec import encode_frame
from rematch_trace.live.ipc.messages import make_reply
from rematch_trace.testing import hold_service_lock


def ask(data: Path, *, start: bool = False, deadline_ms: int = 400) -> dict | None:
    reply = client.ask("pre_tool_use", pre_tool_use("Read", {"file_path": "/x"}), adapter="claude_code",
                       adapter_version="1", host_version="1", data=data, start=start, deadline_ms=deadline_ms)
    return None if reply is None else dict(reply)


@contextmanager
def fake_service(data: Path, answer: Callable[[socket.socket, bytes], None]) -> Iterator[None]:
    """A stand-in listening on the events socket that answers each connection with ``answer``."""
    run = paths.run_dir(data)
    run.mkdir(parents=True, mode=0o700)
    lock = hold_service_lock(run)  # the stand-in is the service: clients believe only the lock's holder
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(os.fspath(paths.events_socket(data)))
    srv.listen(8)
    srv.settimeout(0.1)
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    head = conn.recv(4)
                    body = conn.recv(int.from_bytes(head, "big"), socket.MSG_WAITALL) if len(head) == 4 else b""
                    answer(conn, body)
                except OSError:
                    pass

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join(2)
        srv.close()
        os.close(lock)


def log_of(data: Path) -> str:
    """The data folder's live log, or "" when nothing was logged."""
    try:
        return paths.log_file(data).read_text()
    except FileNotFoundError:
        return ""


def test_no_service_fails_open_fast_and_logs_it(tmp_path: Path) -> None:
    t = time.monotonic()
    assert ask(tmp_path) is None
    assert time.monotonic() - t < 0.4
    line = log_of(tmp_path).strip()
    assert "client fail_open" in line and "cause=no_service" in line
    assert client.fail_open("r1")["decision"] == "no_override"


def test_garbage_answer_fails_open(tmp_path: Path) -> None:
    with fake_service(tmp_path, lambda c, _: c.sendall(b"\x00\x00\x00\x05hello")):
        assert ask(tmp_path) is None
    assert "cause=bad_reply: invalid_json" in log_of(tmp_path)


def test_over_long_reply_fails_open_without_reading_it(tmp_path: Path) -> None:
    with fake_service(tmp_path, lambda c, _: c.sendall((1 << 30).to_bytes(4, "big"))):
        assert ask(tmp_path) is None
    assert "cause=bad_reply: frame_too_long" in log_of(tmp_path)


def test_slow_service_fails_open_within_the_deadline(tmp_path: Path) -> None:
    with fake_service(tmp_path, lambda c, _: time.sleep(1.5)):
        t = time.monotonic()
        assert ask(tmp_path, deadline_ms=300) is None
        assert time.monotonic() - t < 0.9
    assert "cause=bad_reply: read_deadline" in log_of(tmp_path)


def test_reply_to_another_request_fails_open(tmp_path: Path) -> None:
    other = make_reply("someone-else", "deny", "x", "y", source="local_rules")
    with fake_service(tmp_path, lambda c, _: c.sendall(encode_frame(other, 1 << 14))):
        assert ask(tmp_path) is None
    assert "cause=bad_reply" in log_of(tmp_path)


def test_a_service_that_hangs_up_fails_open(tmp_path: Path) -> None:
    with fake_service(tmp_path, lambda c, _: None):
        assert ask(tmp_path) is None
    assert "cause=closed" in log_of(tmp_path)


def test_client_starts_the_service_on_demand(tmp_path: Path) -> None:
    data = tmp_path / "data"
    reply = ask(data, start=True, deadline_ms=20000)
    lock = paths.run_dir(data) / "serve.lock"
    try:
        assert reply is not None and reply["decision"] == "no_override"
        assert ask(data) is not None  # the same service, already up
    finally:
        pid = int(lock.read_text())
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not paths.events_socket(data).exists(), what="the started service to stop")


def test_a_connection_reset_before_any_reply_is_tried_once_more(tmp_path: Path) -> None:
    """A service stopping as the client connects resets the connection; the retry is answered."""
    run = paths.run_dir(tmp_path)
    run.mkdir(parents=True, mode=0o700)
    lock = hold_service_lock(run)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(os.fspath(paths.events_socket(tmp_path)))
    srv.listen(8)
    seen: list[str] = []

    def serve() -> None:
        first, _ = srv.accept()
        time.sleep(0.05)  # the request is in first's receive queue, unread
        first.close()  # unread data: the kernel resets the client's connection
        seen.append("reset")
        with srv.accept()[0] as conn:
            conn.settimeout(5)
            head = conn.recv(4, socket.MSG_WAITALL)
            body = conn.recv(int.from_bytes(head, "big"), socket.MSG_WAITALL)
            rid = orjson.loads(body)["request_id"]
            conn.sendall(encode_frame(make_reply(rid, "no_override", "ok", "ok", source="local_rules"), 1 << 14))
            seen.append("answered")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        reply = ask(tmp_path, deadline_ms=3000)
    finally:
        t.join(5)
        srv.close()
        os.close(lock)
    assert seen == ["reset", "answered"]
    assert reply is not None and reply["decision"] == "no_override", log_of(tmp_path)
    assert log_of(tmp_path) == ""  # answered: nothing failed open


def test_a_reply_cut_short_fails_open_within_the_deadline(tmp_path: Path) -> None:
    def cut(conn: socket.socket, _: bytes) -> None:
        conn.sendall(b"\x00\x00")  # half a header, then the close below
    with fake_service(tmp_path, cut):
        t = time.monotonic()
        assert ask(tmp_path, deadline_ms=300) is None
        assert time.monotonic() - t < 0.9
    assert "client fail_open" in log_of(tmp_path)


def test_a_killed_services_socket_is_replaced_by_the_next_start(tmp_path: Path) -> None:
    """SIGKILL leaves the sockets behind; the next client's start replaces them and is answered."""
    data = tmp_path / "data"
    assert ask(data, start=True, deadline_ms=20000) is not None, log_of(data)
    lock = paths.run_dir(data) / "serve.lock"
    first = int(lock.read_text())
    os.kill(first, signal.SIGKILL)
    # Not the leader's zombie state: the leader of a threaded process turns zombie while its other
    # threads, which share its open sockets, are still exiting (a connection made then is reset).
    # So wait until the socket refuses connections: the last thread, and the listener, are gone.
    wait_for(lambda: not connectable(paths.events_socket(data)), what="the killed service's listener to close")
    assert paths.events_socket(data).exists()  # left behind: nobody removed it
    try:
        assert ask(data, start=True, deadline_ms=20000) is not None, log_of(data)
        second = int(lock.read_text())
        assert second != first
    finally:
        os.kill(int(lock.read_text()), signal.SIGTERM)
        wait_for(lambda: not paths.events_socket(data).exists(), what="the second service to stop")


def test_client_module_imports_only_the_standard_library_and_the_codec() -> None:
    code = (
        "import sys; import rematch_trace.live.client\n"
        "heavy = [m for m in ('attrs', 'orjson', 'yaml', 'click', 'pluggy', 'rematch_trace.security.events',"
        " 'rematch_trace.store.datafolder', 'subprocess') if m in sys.modules]\n"
        "print(heavy)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env(), timeout=60)
    assert res.stdout.strip() == "[]", res.stdout + res.stderr


def test_relative_and_absolute_folders_find_the_same_service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert paths.run_dir(Path("d")).resolve() == paths.run_dir(tmp_path / "d")
    deep = Path("x" * 90)
    assert paths.run_dir(deep) == paths.run_dir(tmp_path / deep)  # both take the runtime folder
