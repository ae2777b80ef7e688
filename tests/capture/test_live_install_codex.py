"""``rematch hooks install|uninstall|status --harness codex``: Codex's ``$CODEX_HOME/hooks.json``."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

from capture_helpers import REMATCH, hook_env

from rematch_trace.live.install import CODEX_EVENTS

USER_HOOKS = b"""{
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "python3 ~/guard.py", "timeout": 5}]}],
    "Stop": []
  }
}
"""


def _rematch(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([REMATCH, "hooks", *args, "--harness", "codex"], capture_output=True, text=True,
                          env=env, timeout=60)


def _env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    home = tmp_path / "codex-home"
    home.mkdir()
    env = hook_env(tmp_path, tmp_path / "data")
    env = {k: v for k, v in env.items() if not k.startswith("CODEX_")}
    env["CODEX_HOME"] = str(home)
    return env, home / "hooks.json"


def test_codex_install_is_idempotent_keeps_user_hooks_and_uninstall_restores_exactly(tmp_path: Path) -> None:
    env, hooks = _env(tmp_path)
    hooks.write_bytes(USER_HOOKS)
    os.chmod(hooks, 0o640)
    first = _rematch(env, "install")
    assert first.returncode == 0, first.stderr
    assert f"installed {len(CODEX_EVENTS)} hooks in {hooks}" in first.stdout
    # What Codex asks before it runs a new hook, and the switch for automation.
    assert "open /hooks" in first.stdout and "--dangerously-bypass-hook-trust" in first.stdout
    once = hooks.read_bytes()
    again = _rematch(env, "install")
    assert again.returncode == 0 and "already installed" in again.stdout and "trust" not in again.stdout
    assert hooks.read_bytes() == once
    doc = json.loads(once)
    assert doc["hooks"]["PreToolUse"][0] == {
        "matcher": "Bash", "hooks": [{"type": "command", "command": "python3 ~/guard.py", "timeout": 5}]}
    assert sorted(doc["hooks"]) == sorted(e for e, _a, _m in CODEX_EVENTS)
    for event, _a, _m in CODEX_EVENTS:
        [group] = [g for g in doc["hooks"][event] if "rematch_hook.py" in json.dumps(g)]
        # Codex reads no "async" key, and a group without a matcher matches every tool.
        assert "matcher" not in group and "async" not in group["hooks"][0], event
        words = shlex.split(group["hooks"][0]["command"])
        assert words[0] == "exec" and words[4].endswith("rematch_hook.py") and words[5] == "codex", words
    pre = next(g for g in doc["hooks"]["PreToolUse"] if "rematch_hook.py" in json.dumps(g))["hooks"][0]
    assert pre["timeout"] > 100 and "--deadline-ms=" in pre["command"]  # a held call may wait for a person
    assert hooks.with_name("hooks.json.rematch-backup").read_bytes() == USER_HOOKS
    status = _rematch(env, "status", "--json")
    report = json.loads(status.stdout)
    assert (report["harness"], report["settings"], report["missing"], report["broken"]) == (
        "codex", str(hooks), [], [])
    assert status.returncode == 0  # every installed command can run (its leading exec understood)
    gone = _rematch(env, "uninstall")
    assert gone.returncode == 0 and "restored" in gone.stdout
    assert hooks.read_bytes() == USER_HOOKS and os.stat(hooks).st_mode & 0o777 == 0o640
    assert not hooks.with_name("hooks.json.rematch-backup").exists()


def test_codex_install_without_a_file_and_uninstall_removes_it(tmp_path: Path) -> None:
    env, hooks = _env(tmp_path)
    assert _rematch(env, "install").returncode == 0 and hooks.is_file()
    assert _rematch(env, "uninstall").returncode == 0
    assert not hooks.exists() and list(hooks.parent.iterdir()) == []


def test_codex_malformed_hooks_file_is_refused_untouched(tmp_path: Path) -> None:
    env, hooks = _env(tmp_path)
    broken = b'{\n  "hooks": {\n    "Stop": [\n  }\n}\n'
    hooks.write_bytes(broken)
    res = _rematch(env, "install")
    assert res.returncode != 0 and "line 4" in res.stderr and str(hooks) in res.stderr
    assert hooks.read_bytes() == broken
    shaped = b'{"hooks": {"PreToolUse": {"hooks": []}}}\n'
    hooks.write_bytes(shaped)
    res = _rematch(env, "install")
    assert res.returncode != 0 and '"hooks".PreToolUse' in res.stderr
    assert hooks.read_bytes() == shaped
    assert not hooks.with_name("hooks.json.rematch-backup").exists()
