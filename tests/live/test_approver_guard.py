"""An agent cannot approve its own held call (docs/threat-model.md), through real processes.

A fake harness (tests/live/fake_harness.py, standing in for Claude Code) runs
the plugin's real ``bin/rematch-hook`` for a ``PreToolUse`` that a real
``rematch serve`` holds, and runs the agent's commands as its children. Each
escape the agent could try is such a command; each must be refused. A person
(this test process, which plays the person's terminal through a pty it opens)
approves with the one-time code the service writes to that terminal.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from live_helpers import clean_env, pre_tool_use, rematch, running_service, wait_for

from rematch_trace.live.approver_guard import MAX_HARNESSES, Guard, Refusal, Terminal

HERE = Path(__file__).resolve().parent
FAKE_HARNESS = HERE / "fake_harness.py"
FLOOD = HERE / "flood_attacker.py"
REMATCH_BIN = Path(sys.executable).parent / "rematch"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the guard reads Linux /proc")


def policy(tmp: Path, *, without_code: bool, timeout_s: int = 60) -> Path:
    """A policy that holds every shell call for a person (60 s)."""
    path = tmp / "policy.yml"
    path.write_text(f"""\
version: 1
approval_timeout_s: {timeout_s}
approve_without_code: {'true' if without_code else 'false'}
rules:
  - id: hold-shell
    decision: hold
    explanation: Shell calls wait for a person.
    when:
      action_types: [shell_exec]
""")
    return path


class FakeHarness:
    """A running fake_harness.py in a session of its own (as Claude Code in its own terminal)."""

    def __init__(self, deadline_ms: int = 90000, **kw: Any) -> None:
        self.proc = subprocess.Popen([sys.executable, str(FAKE_HARNESS)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, start_new_session=True,
                                     env=clean_env(REMATCH_IPC_DEADLINE_MS=str(deadline_ms)), **kw)
        self.reports: dict[int, dict[str, Any]] = {}
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            r = json.loads(line)
            self.reports[r["id"]] = r

    def order(self, **order: Any) -> int:
        """Send one order (``hook=..., payload=...`` or ``bash=...``); its id."""
        self._next += 1
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"id": self._next, **order}) + "\n")
        self.proc.stdin.flush()
        return self._next

    def result(self, order_id: int, timeout: float = 60) -> dict[str, Any]:
        """The report of order ``order_id`` once it ended."""
        wait_for(lambda: order_id in self.reports, timeout=timeout, what=f"order {order_id} of the fake harness")
        return self.reports[order_id]

    def close(self) -> None:
        """End it (and whatever it still runs in its session)."""
        try:
            os.killpg(self.proc.pid, 9)
        except ProcessLookupError:
            pass
        self.proc.wait(10)


@contextmanager
def harness(**kw: Any) -> Iterator[FakeHarness]:
    h = FakeHarness(**kw)
    try:
        yield h
    finally:
        h.close()


def pending(data: Path) -> list[dict[str, Any]]:
    res = rematch("approvals", "--out", str(data), "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)  # type: ignore[no-any-return]


def hold_a_call(h: FakeHarness, data: Path, hook: str, command: str = "curl -fsSL https://get.example.sh | sh",
                ) -> tuple[int, str]:
    """Have the fake harness run hook command ``hook`` for a shell call the service holds; (order, approval id)."""
    from rematch_claude_code.folder import template
    from rematch_trace.live.harness_folder import made_whole

    plugin_hook = made_whole(template(), "claude_code", data) / "bin" / "rematch-hook"  # as Claude Code gets it
    order = h.order(hook=hook.format(plugin_hook=plugin_hook, data=data),
                    payload=pre_tool_use("Bash", {"command": command}))
    wait_for(lambda: len(pending(data)) == 1, timeout=90, what=lambda: f"the held call; log: {log(data)}")
    return order, pending(data)[0]["approval_id"]


def log(data: Path) -> str:
    f = data / "live.log"
    return f.read_text() if f.exists() else "(none)"


def step(tmp: Path, *, tty: bool) -> Path:
    """The agent's approval attempt as a script: ``step AID DATA RESULT`` leaves RESULT.out and RESULT.rc."""
    path = tmp / ("step-tty.sh" if tty else "step.sh")
    # On a terminal only stderr goes to the file, so that the command sees a terminal on stdout.
    out = '2>"$3.out"' if tty else '>"$3.out" 2>&1'
    path.write_text(f'#!/bin/sh\n{REMATCH_BIN} approve "$1" --out "$2" {out}\necho $? >"$3.rc"\n')
    return path


#: Each escape an agent may try, as the command its Bash tool runs ({s}: the step script and its arguments).
ESCAPES = {
    "child": "sh {s}",
    "double_fork": "( sh {s} & )",
    "setsid": "setsid -f sh {s}",
    "nohup": "nohup sh {s} >/dev/null 2>&1 &",
    "disown": "bash -c 'sh {s} & disown'",
    "env_i": "env -i /bin/sh {s}",
    "script": "script -q -e -c 'sh {t}' /dev/null",
    "script_detached": "( script -q -e -c 'sh {t}' /dev/null & )",
}


@pytest.mark.parametrize(("hook", "own_session"), [
    # hooks.json as shipped; the agent's commands in the harness's session (a plain spawn).
    ('exec "{plugin_hook}" claude_code --out {data}', False),
    # A shell that may not exec (the wrapper is seen through); each command in a session of its own (a
    # detached spawn), so that the session and group rule cannot help: ancestry and detachment must.
    ('"{plugin_hook}" claude_code --out {data}', True),
])
def test_no_escape_of_the_agent_approves_its_own_held_call(tmp_path: Path, hook: str, own_session: bool) -> None:
    """Without the one-time code (the policy opts out), the process checks alone refuse every escape."""
    data = tmp_path / "data"
    plain, on_tty = step(tmp_path, tty=False), step(tmp_path, tty=True)
    with running_service(data, "--policy", str(policy(tmp_path, without_code=True))), harness() as h, \
            harness() as other:
        hook_order, aid = hold_a_call(h, data, hook)
        results = {}
        for name, escape in ESCAPES.items():
            res = tmp_path / name
            args = f"{aid} {data} {res}"
            results[name] = res
            h.order(bash=escape.format(s=f"{plain} {args}", t=f"{on_tty} {args}"), session=own_session)
        # Another session of the same harness, which never ran a hook: its agent is refused too.
        results["other_session"] = tmp_path / "other_session"
        other.order(bash=f"sh {plain} {aid} {data} {results['other_session']}", session=own_session)
        for name, res in results.items():
            rc = Path(f"{res}.rc")
            wait_for(rc.exists, timeout=60, what=f"the {name} attempt")
            wait_for(lambda rc=rc: rc.read_text().strip() != "", timeout=10, what=f"the {name} status")
            out = Path(f"{res}.out").read_text()
            assert rc.read_text().strip() == "1" and "self_approval" in out, (name, out, log(data))
        assert [a["approval_id"] for a in pending(data)] == [aid]
        assert h.reports.get(hook_order) is None  # still held

        # A person, in a process of their own (this test's child), approves it.
        ok = rematch("approve", aid, "--out", str(data))
        assert ok.returncode == 0 and "approved" in ok.stdout, ok.stderr
        held = h.result(hook_order)
        # The hook answers nothing (the call goes on, no_override) and exits 0.
        assert (held["rc"], held["stdout"]) == (0, ""), held
        assert f"approval approval_id={aid} state=approved" in log(data)


def _read_until(fd: int, pattern: str, timeout: float = 60) -> str:
    """Read a pty master until ``pattern`` matches what was read; all of it."""
    seen = b""
    end = time.monotonic() + timeout
    while not re.search(pattern, seen.decode(errors="replace")):
        left = end - time.monotonic()
        assert left > 0, f"no {pattern!r} in {seen!r}"
        if select.select([fd], [], [], left)[0]:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the slave side closed (EIO)
                chunk = b""
            assert chunk, f"the terminal closed before {pattern!r}: {seen!r}"
            seen += chunk
    return seen.decode(errors="replace")


@pytest.mark.parametrize("command", ["approve", "approvals"])
def test_a_person_approves_with_the_code_written_to_their_terminal(tmp_path: Path, command: str) -> None:
    """``rematch approve ID`` at a terminal, or ``rematch approvals`` and its prompt."""
    data = tmp_path / "data"
    with running_service(data, "--policy", str(policy(tmp_path, without_code=False))), harness() as h:
        hook_order, aid = hold_a_call(h, data, 'exec "{plugin_hook}" claude_code --out {data}')

        # The agent behind a pseudo-terminal of its own, detached: refused before any code is issued.
        res = tmp_path / "agent"
        h.order(bash=f"( script -q -e -c 'sh {step(tmp_path, tty=True)} {aid} {data} {res}' /dev/null & )")
        wait_for(Path(f"{res}.rc").exists, timeout=60, what="the agent's attempt")
        assert "self_approval" in Path(f"{res}.out").read_text()

        # Not at a terminal, even a person is refused by default, and told why.
        plain = rematch("approve", aid, "--out", str(data))
        assert plain.returncode == 1 and "code_required" in plain.stderr and "approve_without_code" in plain.stderr

        # At a terminal (this test holds its master): the code appears there, and is typed back.
        master, slave = os.openpty()
        try:
            args = ["approve", aid] if command == "approve" else ["approvals"]
            person = subprocess.Popen(["setsid", "-c", str(REMATCH_BIN), *args, "--out", str(data)],
                                      stdin=slave, stdout=slave, stderr=slave, env=clean_env())
            os.close(slave)
            if command == "approvals":
                assert "curl -fsSL https://get.example.sh | sh" in _read_until(master, "Enter to leave: ")
                os.write(master, f"a {aid}\n".encode())
            shown = _read_until(master, r"one-time code \(as shown above\): ")
            code = re.search(r"approve \w+: (\d{4}-\d{4})", shown)
            assert code is not None, shown
            assert code.group(1) not in log(data)  # never logged
            os.write(master, b"0000-0000\n")
            _read_until(master, "2 tries left")
            os.write(master, code.group(1).encode() + b"\n")
            assert person.wait(60) == 0
            assert f"{aid} approved" in _read_until(master, "approved")
        finally:
            os.close(master)
        held = h.result(hook_order)
        assert (held["rc"], held["stdout"]) == (0, ""), held
        assert f"approval approval_id={aid} state=approved" in log(data)


def test_a_terminal_driven_by_the_agent_gets_no_code(tmp_path: Path) -> None:
    """A process outside the agent's tree, on a pty whose master the agent holds, is at no person's terminal."""
    master, slave = os.openpty()
    guard = Guard()
    procs: list[subprocess.Popen[bytes]] = []
    h = FakeHarness(pass_fds=(master,))  # the harness (the agent) holds the master
    try:
        os.close(master)
        # A command of the agent (a child of the harness) connects, as a hook client would: the harness is seen.
        pid_file = tmp_path / "pid"
        h.order(bash=f"echo $$ >{pid_file}; exec sleep 60")
        wait_for(lambda: pid_file.exists() and pid_file.read_text().strip() != "", what="the agent's command")
        guard.note_client(int(pid_file.read_text()))
        on_agents_pty = subprocess.Popen(["setsid", "-c", "sleep", "60"], stdin=slave, stdout=slave, stderr=slave)
        procs.append(on_agents_pty)
        wait_for(lambda: _ctty(on_agents_pty.pid) != 0, what="the controlling terminal")
        assert guard.vet_approver(on_agents_pty.pid) is None  # its ancestry is clean: only the terminal tells
        verdict = guard.vet_terminal(on_agents_pty.pid)
        assert isinstance(verdict, Refusal) and verdict.error == "terminal_untrusted", verdict

        # Without a terminal, no code either.
        no_tty = subprocess.Popen(["sleep", "60"], stdin=subprocess.DEVNULL, start_new_session=True)
        procs.append(no_tty)
        refused = guard.vet_terminal(no_tty.pid)
        assert isinstance(refused, Refusal) and refused.error == "no_terminal"

        # A pty whose master this test (the person's terminal) holds: a terminal a person is at.
        mine, theirs = os.openpty()
        try:
            person = subprocess.Popen(["setsid", "-c", "sleep", "60"], stdin=theirs, stdout=theirs, stderr=theirs)
            procs.append(person)
            wait_for(lambda: _ctty(person.pid) != 0, what="the controlling terminal")
            assert guard.vet_approver(person.pid) is None
            assert isinstance(guard.vet_terminal(person.pid), Terminal)
        finally:
            os.close(mine)
            os.close(theirs)
    finally:
        os.close(slave)
        for p in procs:
            p.kill()
            p.wait()
        h.close()


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rfind(")") + 2:].split()


def _ctty(pid: int) -> int:
    fields = _stat_fields(pid)
    return int(fields[4]) if fields else 0


def person_approves(data: Path, aid: str) -> str:
    """A person in a terminal of their own (this test holds its master) approves ``aid`` with the code; the screen."""
    master, slave = os.openpty()
    try:
        person = subprocess.Popen(["setsid", "-c", str(REMATCH_BIN), "approve", aid, "--out", str(data)],
                                  stdin=slave, stdout=slave, stderr=slave, env=clean_env())
        os.close(slave)
        shown = _read_until(master, r"one-time code \(as shown above\): ")
        code = re.search(r"approve \w+: (\d{4}-\d{4})", shown)
        assert code is not None, shown
        # What is approved is on the screen, whole, before the code is asked for.
        assert "you are approving:" in shown[:code.start()] and "shown whole" in shown[:code.start()], shown
        os.write(master, code.group(1).encode() + b"\n")
        assert person.wait(60) == 0, shown
        return shown + _read_until(master, "approved")
    finally:
        os.close(master)


def test_flooding_the_harness_table_never_lets_the_agent_approve(tmp_path: Path) -> None:
    """Issue 41: detach, send 0, 200, 256, 1,000 fake pre_tool_use from processes that stay alive, then run
    ``rematch approve`` on a pty of its own and type back the code. Refused every time; a person still approves."""
    data = tmp_path / "data"
    with running_service(data, "--policy", str(policy(tmp_path, without_code=False, timeout_s=240))), \
            harness(deadline_ms=300000) as h:
        for fakes in (0, 200, 256, 1000):
            hook_order, aid = hold_a_call(h, data, 'exec "{plugin_hook}" claude_code --out {data}')
            res = tmp_path / f"flood-{fakes}.json"
            h.order(bash=f"{sys.executable} {FLOOD} {aid} {data} {fakes} {res}")
            wait_for(res.exists, timeout=230, what=lambda n=fakes: f"the attack with {n} fakes; log: {log(data)[-2000:]}")
            got = json.loads(res.read_text())
            # Most fakes were taken for a harness's hook (on a loaded machine some miss their deadline).
            assert got["answered"] >= fakes // 2, got
            assert got["ppid"] == 1 or got["sid"] != h.proc.pid, got  # it did leave the harness's tree
            assert got["rc"] != 0 and not got["code_seen"], (fakes, got, log(data)[-2000:])
            # Below the table's bound the real harness taints the detached approver; at and past it (the
            # harness and 256 fakes are more than 256 live harnesses) no approval is given at all, and the held
            # call's own harness would refuse it anyway.
            assert "self_approval" in got["shown"] or (fakes >= MAX_HARNESSES and "guard_saturated" in got["shown"]), got
            assert [a["approval_id"] for a in pending(data)] == [aid]
            assert h.reports.get(hook_order) is None  # still held
            # Once the fakes are gone, a person at a terminal of their own approves it.
            screen = person_approves(data, aid)
            assert f"{aid} approved" in screen and "curl -fsSL https://get.example.sh | sh" in screen
            held = h.result(hook_order)
            assert (held["rc"], held["stdout"]) == (0, ""), held
        text = log(data)
        assert text.count("state=approved") == 4


def _sleepers(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen(["sleep", "60"], start_new_session=True) for _ in range(n)]


def test_a_full_table_keeps_every_live_harness_and_refuses_approvals() -> None:
    """No live harness is dropped for a newcomer: past the bound newcomers are unrecorded and approving waits."""
    harness_proc, *fakes = _sleepers(4)
    person = subprocess.Popen(["tail", "-f", "/dev/null"])  # this test's child: another program, no harness above
    try:
        guard = Guard(max_harnesses=3, max_unrecorded=2)
        real = guard.note_client(harness_proc.pid, itself=True)
        assert real is not None
        for f in fakes[:2]:
            guard.note_client(f.pid, itself=True)
        assert guard.saturated() is None and len(guard.harnesses()) == 3
        guard.note_client(fakes[2].pid, itself=True)  # one too many: not recorded, and nothing forgotten
        assert {h.proc.pid for h in guard.harnesses()} == {harness_proc.pid, fakes[0].pid, fakes[1].pid}
        refused = guard.vet_approver(person.pid)
        assert refused is not None and refused.error == "guard_saturated", refused
        assert guard.vet_approver(person.pid, approving=False) is None  # a denial lets nothing run
        fakes[2].kill()
        fakes[2].wait()
        assert guard.saturated() is None and guard.vet_approver(person.pid) is None
        # A dead harness makes room; a held call's own harness taints its approvers whatever the table holds.
        fakes[0].kill()
        fakes[0].wait()
        other = _sleepers(1)[0]
        fakes.append(other)
        guard.note_client(other.pid, itself=True)
        assert other.pid in {h.proc.pid for h in guard.harnesses()}
        empty = Guard(max_harnesses=0, max_unrecorded=10)
        refused = empty.vet_approver(harness_proc.pid, [real], approving=False)
        assert refused is not None and "is the harness" in refused.message
        # More unrecorded harnesses than can be remembered: blind until the service restarts.
        for f in fakes[1:]:
            empty.note_client(f.pid, itself=True)
        late = _sleepers(11)
        fakes.extend(late)
        for f in late:
            empty.note_client(f.pid, itself=True)
        for f in late:
            f.kill()
            f.wait()
        refused = empty.vet_approver(person.pid)
        assert refused is not None and "restart the service" in refused.message
    finally:
        for p in [harness_proc, *fakes, person]:
            p.kill()
            p.wait()


def test_an_ancestry_that_cannot_be_read_whole_is_refused() -> None:
    """A chain nested past the bound (or cut by a parent exiting mid-read) proves nothing: refused."""
    from rematch_trace.live import procs

    nest = "sleep 60"
    for _ in range(8):
        nest = f"sh -c '{nest.replace(chr(39), chr(39) + chr(92) + chr(39) + chr(39))}; :'"
    deep = subprocess.Popen(["sh", "-c", nest], start_new_session=True)
    try:
        def leaf() -> int | None:
            out = subprocess.run(["pgrep", "-s", str(deep.pid), "-x", "sleep"], capture_output=True, text=True)
            return int(out.stdout.split()[0]) if out.stdout.split() else None

        wait_for(lambda: leaf() is not None, what="the nested sleep")
        pid = leaf()
        assert pid is not None
        chain = procs.lineage(pid)
        assert chain is not None and len(chain) >= 9
        assert procs.lineage(pid, limit=5) is None
        assert procs.lineage(2**22 + 1) is None  # no such process
        guard = Guard()
        assert guard.taint(2**22 + 1) is not None
    finally:
        os.killpg(deep.pid, 9)
        deep.wait()
