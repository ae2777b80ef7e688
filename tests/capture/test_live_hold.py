"""A held call through the installed hooks: the real hook client, a real ``rematch serve``, the real CLI.

``rematch hooks install --hold-seconds N`` gives the PreToolUse hook Claude Code's ``timeout``
and the hook client an IPC budget (``--deadline-ms``) long enough for a person to decide; the
reply after a decision reports that decision.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import orjson
from capture_helpers import REMATCH, hook_env, make_repo

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "live"))
from live_helpers import running_service, wait_for

SID = "5b0e1f2a-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
# The one-time code a person types at their terminal is tested in tests/live/test_approver_guard.py;
# here the person is the test process, approving without a terminal.
HOLD_POLICY = """\
version: 1
approval_timeout_s: 60
approve_without_code: true
rules:
  - id: hold-deploy
    decision: hold
    explanation: Deploys wait for a person.
    when:
      action_types: [shell_exec]
"""
#: The hook client's own short budget (rematch_hook.DEADLINE_MS): a hold must outlast it.
SHORT_BUDGET_S = 1.5


def _rematch(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([REMATCH, *args], capture_output=True, text=True, env=env, timeout=60)


def _install(tmp_path: Path, env: dict[str, str], *args: str) -> dict[str, list[dict]]:
    """Install the hooks into a settings file of ``tmp_path``; the settings' hooks."""
    settings = tmp_path / "settings.json"
    res = _rematch(env, "hooks", "install", "--settings", str(settings), *args)
    assert res.returncode == 0, res.stderr
    hooks: dict[str, list[dict]] = json.loads(settings.read_text())["hooks"]
    return hooks


def test_install_gives_pretooluse_a_timeout_and_budget_for_a_hold(tmp_path: Path) -> None:
    env = hook_env(tmp_path, tmp_path / "data")
    policy = tmp_path / "policy.yml"
    policy.write_text(HOLD_POLICY.replace("approval_timeout_s: 60", "approval_timeout_s: 45"))
    hooks = _install(tmp_path, {**env, "REMATCH_POLICY": str(policy)})
    [pre] = hooks["PreToolUse"][0]["hooks"]
    # The policy's approval timeout (45 s) plus the short budget; Claude Code's timeout outlasts it.
    assert pre["command"].endswith(" --deadline-ms=46500") and pre["timeout"] == 57
    for event, groups in hooks.items():
        if event != "PreToolUse":
            [h] = groups[0]["hooks"]
            assert "timeout" not in h and "--deadline-ms" not in h["command"], event
    hooks = _install(tmp_path, env, "--hold-seconds", "30")
    [pre] = hooks["PreToolUse"][0]["hooks"]
    assert pre["command"].endswith(" --deadline-ms=31500") and pre["timeout"] == 42
    assert len(hooks["PreToolUse"]) == 1  # replaced, not doubled


def _held_hook(tmp_path: Path, hold_seconds: int, command: str) -> tuple[Path, dict[str, str], subprocess.Popen[bytes]]:
    """Install the hooks, and run the installed PreToolUse command for a shell call, under a shell (the harness)."""
    data = tmp_path / "data"
    env = hook_env(tmp_path, data, SID, service=True)
    hooks = _install(tmp_path, env, "--hold-seconds", str(hold_seconds))
    pre = hooks["PreToolUse"][0]["hooks"][0]["command"]
    repo = make_repo(tmp_path / "repo")
    payload = {"session_id": SID, "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(repo),
               "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_use_id": "toolu_held", "tool_input": {"command": command}}
    # The command (which execs the hook client) runs in a subshell, and "; exit $?" keeps the outer
    # shell (the harness) as the hook's parent (the approver must not descend from it), and
    # the shell runs in a session of its own, as a harness started from another terminal does: the
    # service refuses an approver in the harness's session (docs/threat-model.md).
    # (From a script file: a parent whose command line names the hook client is taken for a wrapper.)
    harness = tmp_path / "harness.sh"
    harness.write_text(f"( {pre} ); exit $?\n")
    stdin = tmp_path / "payload.json"
    stdin.write_bytes(orjson.dumps(payload))
    with open(stdin, "rb") as f:
        proc = subprocess.Popen(["sh", str(harness)], stdin=f, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, start_new_session=True)
    return data, env, proc


def _pending(env: dict[str, str], data: Path) -> list[dict]:
    res = _rematch(env, "approvals", "--out", str(data), "--json")
    return json.loads(res.stdout) if res.returncode == 0 else []


def _log(data: Path) -> str:
    f = data / "live.log"
    return f.read_text() if f.exists() else "(no log)"


def test_a_held_call_waits_for_a_person_who_approves_it(tmp_path: Path) -> None:
    (tmp_path / "policy.yml").write_text(HOLD_POLICY)
    data = tmp_path / "data"
    with running_service(data, "--policy", str(tmp_path / "policy.yml")):
        data, env, proc = _held_hook(tmp_path, 60, "make deploy")
        wait_for(lambda: len(_pending(env, data)) == 1, timeout=60, what=lambda: f"the held call; log: {_log(data)}")
        [held] = _pending(env, data)
        # Past the hook client's short budget: before, the call was denied by now.
        time.sleep(SHORT_BUDGET_S + 0.5)
        ok = _rematch(env, "approve", held["approval_id"], "--out", str(data))
        assert ok.returncode == 0 and "approved" in ok.stdout, (ok.stderr, _log(data))
        out, err = proc.communicate(timeout=60)
        assert (proc.returncode, out, err) == (0, b"", b""), _log(data)
    assert f"approval approval_id={held['approval_id']} state=approved" in _log(data)


def test_a_held_call_denied_by_a_person_says_so(tmp_path: Path) -> None:
    (tmp_path / "policy.yml").write_text(HOLD_POLICY)
    data = tmp_path / "data"
    with running_service(data, "--policy", str(tmp_path / "policy.yml")):
        data, env, proc = _held_hook(tmp_path, 60, "make deploy")
        wait_for(lambda: len(_pending(env, data)) == 1, timeout=60, what=lambda: f"the held call; log: {_log(data)}")
        [held] = _pending(env, data)
        aid = held["approval_id"]
        time.sleep(SHORT_BUDGET_S + 0.5)
        assert _rematch(env, "deny", aid, "--out", str(data)).returncode == 0
        out, _err = proc.communicate(timeout=60)
    reason = json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"]
    assert "Deploys wait for a person." in reason and f"rematch deny {aid}" in reason
    assert "denied by a person" in reason and "approval:denied" in reason
    assert "rematch approve" not in reason


def test_a_held_call_no_one_decides_names_the_approval_and_the_command(tmp_path: Path) -> None:
    (tmp_path / "policy.yml").write_text(HOLD_POLICY)
    data = tmp_path / "data"
    with running_service(data, "--policy", str(tmp_path / "policy.yml")):
        data, _env, proc = _held_hook(tmp_path, 1, "make deploy")
        out, _err = proc.communicate(timeout=60)
    reason = json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"]
    m = re.search(r"approval ([0-9a-f]{12})", reason)
    assert m is not None, reason
    aid = m.group(1)
    assert f"hold approval_id={aid}" in _log(data)
    assert f"`rematch approve {aid}`" in reason and "expired" in reason and "approval:expired" in reason
