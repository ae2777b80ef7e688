"""A client that runs inside its harness (pi's and omp's extension) is the harness, not its parent.

A hook client is a process the harness starts, so the service takes the client's parent for the
harness whose tree may not approve its own held calls (live/approver_guard.py). pi's extension
runs in pi's own process: its parent is whatever started pi (a person's shell, the rig's driver).
Taking that parent for the harness refused a person's approval (``self_approval``) from the
tree that started pi. The extension names its own pid (``host_payload.harness_pid``); when that is
the connection's pid, the client itself is recorded.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from live_helpers import clean_env, pre_tool_use, rematch, running_service, wait_for

HOLD_POLICY = """\
version: 1
approval_timeout_s: 60
approve_without_code: true
rules:
  - id: hold-shell
    decision: hold
    explanation: Shell calls wait for a person.
    when:
      action_types: [shell_exec]
"""

#: A client asking about a call; ``harness_pid`` (its own pid, or another) as argv[4] says.
CLIENT = """\
import json, os, sys
from rematch_trace.live import client
payload = json.loads(sys.argv[2])
payload["harness_pid"] = os.getpid() if sys.argv[4] == "self" else os.getppid()
r = client.ask("pre_tool_use", payload, adapter="omp", adapter_version="1", host_version="1",
               data=sys.argv[1], start=False, deadline_ms=int(sys.argv[3]))
print(json.dumps(r))
"""


def _client(data: Path, command: str, claim: str) -> subprocess.Popen[str]:
    """The client, a child of this test process, in a session of its own.

    A script file: its program (python and the script) is not the approver's (``python -c``), as
    pi's (node and pi's script) is not.
    """
    script = data.parent / "extension_client.py"
    script.write_text(CLIENT)
    args = [sys.executable, str(script), str(data), json.dumps(pre_tool_use("bash", {"command": command})),
            "60000", claim]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(),
                            start_new_session=True)


def _pending(data: Path) -> list[dict]:
    res = rematch("approvals", "--out", str(data), "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _approve_the_held_call(tmp_path: Path, claim: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    policy = tmp_path / "policy.yml"
    policy.write_text(HOLD_POLICY)
    data = tmp_path / "data"
    with running_service(data, "--policy", str(policy)) as service:
        proc = _client(data, "make deploy", claim)
        wait_for(lambda: len(_pending(data)) == 1, timeout=90, what="the held call")
        res = rematch("approve", _pending(data)[0]["approval_id"], "--out", str(data))
        if res.returncode != 0:
            res2 = rematch("deny", _pending(data)[0]["approval_id"], "--out", str(data))
            assert res2.returncode in (0, 1)
            if res2.returncode != 0:
                # No one else here may decide the call: the service's SIGTERM settles it, where it
                # would otherwise wait out approval_timeout_s (a minute) before the client returns.
                service.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    return res, json.loads(out)


def test_an_in_harness_client_is_the_harness(tmp_path: Path) -> None:
    """The extension's pid is the harness: this test process (its parent) approves, as a person would."""
    res, reply = _approve_the_held_call(tmp_path, "self")
    assert res.returncode == 0 and "approved" in res.stdout, res.stderr
    assert reply["decision"] == "no_override", reply


def test_a_claim_of_another_pid_is_not_taken(tmp_path: Path) -> None:
    """``harness_pid`` naming another process (here the client's parent) changes nothing: the parent is
    the harness, and may not approve."""
    res, _reply = _approve_the_held_call(tmp_path, "parent")
    assert res.returncode == 1 and "self_approval" in res.stderr, res.stdout + res.stderr
