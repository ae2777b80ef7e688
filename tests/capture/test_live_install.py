"""``rematch hooks install|uninstall|status`` and the Claude Code plugin shipped in rematch-claude-code."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from pathlib import Path

import orjson
from capture_helpers import REMATCH, hook_env, make_repo, read_jsonl

import rematch_claude_code
from rematch_claude_code.folder import template
from rematch_trace.live.harness_folder import made_whole
from rematch_trace.live.install import EVENTS, HOLD_SECONDS, hold_budget, hook_client
from rematch_trace.store.datafolder import DataDir

#: The plugin's template, as the package ships it (its folder made whole adds the core's hook client).
PLUGIN = Path(rematch_claude_code.__file__).parent / "claude_plugin"
USER_SETTINGS = b"""{
  "model": "opus",
    "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}],
              "Stop": []},
  "permissions": {"allow": ["Bash(ls:*)"]}
}
"""


def _rematch(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([REMATCH, "hooks", *args], capture_output=True, text=True, env=env, timeout=60)


def test_install_is_idempotent_keeps_user_hooks_and_uninstall_restores_exactly(tmp_path: Path) -> None:
    cfg = tmp_path / "claude-config"
    cfg.mkdir()
    settings = cfg / "settings.json"
    settings.write_bytes(USER_SETTINGS)
    os.chmod(settings, 0o640)
    env = hook_env(tmp_path, tmp_path / "data")
    env["CLAUDE_CONFIG_DIR"] = str(cfg)
    first = _rematch(env, "install")
    assert first.returncode == 0 and "installed 12 hooks" in first.stdout, first.stderr
    once = settings.read_bytes()
    again = _rematch(env, "install")
    assert again.returncode == 0 and "already installed" in again.stdout
    assert settings.read_bytes() == once
    doc = json.loads(once)
    assert doc["model"] == "opus" and doc["permissions"] == {"allow": ["Bash(ls:*)"]}
    pre = doc["hooks"]["PreToolUse"]
    assert pre[0] == {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}
    # Synchronous: a call rematch denies must wait for the answer.
    assert pre[1]["matcher"] == "*" and "async" not in pre[1]["hooks"][0]
    assert doc["hooks"]["PostToolUse"][-1]["hooks"][0]["async"] is True
    assert sorted(doc["hooks"]) == sorted(e for e, _a, _m in EVENTS)
    command = doc["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    # The fast client, with absolute paths: this environment's python without site, the core's script.
    # exec: the shell Claude Code runs it with gives way to the client (its parent is the harness).
    exec_word, *words = shlex.split(command)
    assert exec_word == "exec"
    assert Path(words[0]).is_absolute() and words[1:3] == ["-S", "-I"] and words[4] == "claude_code"
    assert Path(words[3]) == hook_client() and hook_client().parent.name == "live"
    assert (cfg / "settings.json.rematch-backup").read_bytes() == USER_SETTINGS
    assert oct(settings.stat().st_mode & 0o777) == oct(0o640)
    status = _rematch(env, "status", "--json")
    report = orjson.loads(status.stdout)
    assert report["missing"] == [] and report["settings"] == str(settings) and report["live_sessions"] == 0
    out = _rematch(env, "uninstall")
    assert out.returncode == 0 and "exactly" in out.stdout
    assert settings.read_bytes() == USER_SETTINGS
    assert not (cfg / "settings.json.rematch-backup").exists()
    assert "not installed" in _rematch(env, "status").stdout


def test_uninstall_after_other_changes_removes_only_ours(tmp_path: Path) -> None:
    settings = tmp_path / "s.json"
    settings.write_bytes(USER_SETTINGS)
    env = hook_env(tmp_path, tmp_path / "data")
    assert _rematch(env, "install", "--settings", str(settings)).returncode == 0
    doc = json.loads(settings.read_bytes())
    doc["theme"] = "dark"
    settings.write_text(json.dumps(doc))
    res = _rematch(env, "uninstall", "--settings", str(settings))
    assert res.returncode == 0 and "other changes since install kept" in res.stdout
    after = json.loads(settings.read_bytes())
    assert after == {**json.loads(USER_SETTINGS), "theme": "dark"}


def test_install_into_no_file_and_back(tmp_path: Path) -> None:
    settings = tmp_path / "new" / "settings.json"
    env = hook_env(tmp_path, tmp_path / "data")
    assert _rematch(env, "install", "--settings", str(settings), "--out", str(tmp_path / "d")).returncode == 0
    command = json.loads(settings.read_bytes())["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert shlex.split(command)[-2:] == ["--out", str(tmp_path / "d")]
    assert oct(settings.stat().st_mode & 0o777) == oct(0o600)
    assert _rematch(env, "uninstall", "--settings", str(settings)).returncode == 0
    assert not settings.exists() and list(settings.parent.iterdir()) == []


def test_malformed_settings_are_refused_untouched(tmp_path: Path) -> None:
    env = hook_env(tmp_path, tmp_path / "data")
    for body, words in ((b'{"hooks": {', "not valid JSON (line 1"), (b"[]", "not an object"),
                        (b'{"hooks": []}', '"hooks" is not an object'),
                        (b'{"hooks": {"Stop": {"x": 1}}}', '"hooks".Stop is not a list')):
        settings = tmp_path / "settings.json"
        settings.write_bytes(body)
        res = _rematch(env, "install", "--settings", str(settings))
        assert res.returncode == 1 and words in res.stderr and "nothing was changed" in res.stderr, res.stderr
        assert settings.read_bytes() == body
        assert not (tmp_path / "settings.json.rematch-backup").exists()
        assert "Traceback" not in res.stderr


def test_status_reports_recent_events_and_errors(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = hook_env(tmp_path, data, "st-1")
    repo = make_repo(tmp_path / "repo")
    from capture_helpers import run_hook

    run_hook({"session_id": "st-1", "cwd": str(repo), "hook_event_name": "UserPromptSubmit", "prompt": "hi"}, env)
    run_hook(b"garbage", env)
    res = _rematch(env, "status", "--settings", str(tmp_path / "none.json"), "--json")
    report = orjson.loads(res.stdout)
    assert report["live_sessions"] == 1 and report["running"] == 1 and report["errors"] == 1
    assert report["last_event_ms"] and "not JSON" in report["last_error"]
    text = _rematch(env, "status", "--settings", str(tmp_path / "none.json")).stdout
    assert "1 live sessions (1 running)" in text and "1 errors logged" in text


def test_plugin_hooks_json_matches_the_installed_hooks() -> None:
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "rematch" and manifest["version"] == rematch_claude_code.__version__
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    assert list(hooks) == [e for e, _a, _m in EVENTS]
    for event, is_async, matcher in EVENTS:
        [group] = hooks[event]
        [handler] = group["hooks"]
        if event == "PreToolUse":
            # A held call waits for a person as long as an install without --hold-seconds lets it.
            budget_ms, timeout_s = hold_budget(HOLD_SECONDS)
            assert handler["command"].endswith(f" --deadline-ms={budget_ms}") and handler["timeout"] == timeout_s
            handler["command"] = handler["command"].rsplit(" ", 1)[0]
        assert handler["command"] == 'exec "${CLAUDE_PLUGIN_ROOT}"/bin/rematch-hook claude_code'
        assert handler.get("async", False) is is_async and ("matcher" in group) is matcher
    assert (PLUGIN / "commands" / "rematch-mark.md").read_text().startswith("---\ndescription:")
    assert os.access(PLUGIN / "bin" / "rematch-hook", os.X_OK)
    # The script runs the fast client without site.
    assert 'exec python3 -S -I "${0%/*}/rematch_hook.py"' in (PLUGIN / "bin" / "rematch-hook").read_text()


def test_plugin_hook_script_runs_as_claude_code_runs_it(tmp_path: Path) -> None:
    """The hooks.json command, with ${CLAUDE_PLUGIN_ROOT} substituted and exported, through a shell."""
    data = tmp_path / "data"
    env = hook_env(tmp_path, data, "pl-1")
    env["CLAUDE_PLUGIN_ROOT"] = str(made_whole(template(), "claude_code", data))
    env["PATH"] = f"{Path(REMATCH).parent}:{env.get('PATH', '')}"
    repo = make_repo(tmp_path / "repo")
    command = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    for payload in ({"session_id": "pl-1", "cwd": str(repo), "hook_event_name": "UserPromptSubmit", "prompt": "go"},
                    {"session_id": "pl-1", "cwd": str(repo), "hook_event_name": "SessionEnd", "reason": "other"}):
        res = subprocess.run(["sh", "-c", command["command"]], input=orjson.dumps(payload), env=env,
                             capture_output=True, timeout=60)
        assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")
    trace = read_jsonl(DataDir(data).trace_path("pl-1"))
    assert trace[0]["mode"] == "live" and trace[-1]["ev"] == "session_shutdown"
    # Without rematch on PATH the script still exits 0 and prints nothing.
    env["PATH"] = "/usr/bin:/bin"
    res = subprocess.run(["sh", "-c", command["command"]], input=b"{}", env=env, capture_output=True, timeout=60)
    assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")


def test_plugin_hook_script_execs_the_client_and_still_exits_0(tmp_path: Path) -> None:
    """``bin/rematch-hook`` execs python3 (its parent is the harness); what exec could break exits 0 still."""
    script = made_whole(template(), "claude_code", tmp_path / "data") / "bin" / "rematch-hook"
    env = {**hook_env(tmp_path, tmp_path / "data"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen([str(script), "claude_code"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    try:
        # While it waits for its payload, the process Claude Code started is python itself, not a shell.
        deadline = time.monotonic() + 30
        while not os.path.basename(os.readlink(f"/proc/{proc.pid}/exe")).startswith("python"):
            assert time.monotonic() < deadline, os.readlink(f"/proc/{proc.pid}/exe")
            time.sleep(0.01)
    finally:
        out, err = proc.communicate(b"{}", timeout=60)
    assert (proc.returncode, out, err) == (0, b"", b"")
    # No python3 on PATH, or no client beside the script (python3 would exit 2, which blocks a call).
    empty = tmp_path / "empty"
    empty.mkdir()
    res = subprocess.run([str(script), "claude_code"], input=b"{}", env={**env, "PATH": str(empty)},
                         capture_output=True, timeout=60)
    assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")
    alone = tmp_path / "bin" / "rematch-hook"
    alone.parent.mkdir()
    alone.write_bytes(script.read_bytes())
    alone.chmod(0o755)
    res = subprocess.run([str(alone), "claude_code"], input=b"{}", env=env, capture_output=True, timeout=60)
    assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")
