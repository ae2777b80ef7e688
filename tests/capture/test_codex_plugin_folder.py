"""The Codex plugin folder ``rematch-codex`` ships: its contents against Codex's documented shape, and
its hook command run as Codex runs it (``sh -c`` with ``PLUGIN_ROOT`` set to the installed copy).

Codex 0.169 installs it non-interactively (``codex plugin marketplace add`` + ``codex plugin add``)
and runs its hooks: tests/harness/test_rig_codex_plugin.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
from capture_helpers import hook_env, read_jsonl
from test_live_codex import DENIED, SID, TURN

from rematch_trace.live.install import CODEX_EVENTS, HOLD_SECONDS, JUDGED_EVENTS, hold_budget, hook_client


def folder(data: Path) -> Path:
    """The Codex plugin folder, made whole in the data folder ``data``."""
    from rematch_codex.folder import template
    from rematch_trace.live.harness_folder import made_whole

    return made_whole(template(), "codex", data)


def test_the_folder_is_a_codex_plugin_and_its_own_marketplace(tmp_path: Path) -> None:
    root = folder(tmp_path / "data")
    manifest = json.loads((root / ".codex-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "rematch" and manifest["version"]
    # Only the manifest in .codex-plugin/; hooks at the plugin root (Codex's plugin layout).
    assert sorted(p.name for p in (root / ".codex-plugin").iterdir()) == ["plugin.json"]
    market = json.loads((root / ".agents" / "plugins" / "marketplace.json").read_text())
    assert market["plugins"] == [{"name": "rematch", "source": {"source": "local", "path": "./"}}]
    assert os.access(root / "bin" / "rematch-hook", os.X_OK)


def test_the_bundled_hooks_are_what_hooks_install_writes(tmp_path: Path) -> None:
    """Every Codex event rematch installs, one command each; the judged ones wait for a hold."""
    doc = json.loads((folder(tmp_path / "data") / "hooks" / "hooks.json").read_text())
    assert set(doc) == {"description", "hooks"}  # Codex refuses any other root key
    assert list(doc["hooks"]) == [e for e, _a, _m in CODEX_EVENTS]
    budget, timeout = hold_budget(HOLD_SECONDS)
    for event, groups in doc["hooks"].items():
        [group] = groups
        [handler] = group["hooks"]
        assert "matcher" not in group and "async" not in handler, event
        command = 'exec "${PLUGIN_ROOT}"/bin/rematch-hook codex'
        if event in JUDGED_EVENTS:
            assert (handler["command"], handler["timeout"]) == (f"{command} --deadline-ms={budget}", timeout)
        else:
            assert handler == {"type": "command", "command": command}, event


def test_the_bundled_client_is_the_cores_and_follows_an_upgrade(tmp_path: Path) -> None:
    """Codex drops symbolic links when it copies a plugin: the folder carries a copy of the core's
    client, made anew when it differs (an upgrade), by a swap that leaves no stray folder behind."""
    data = tmp_path / "data"
    root = folder(data)
    assert [oct(p.stat().st_mode & 0o777) for p in (data, root.parent, root)] == [oct(0o700)] * 3
    client = root / "bin" / "rematch_hook.py"
    assert client.read_bytes() == hook_client().read_bytes()
    assert (root / "bin" / "rematch-hook").stat().st_mode & 0o777 == 0o700
    assert client.stat().st_mode & 0o777 == 0o600
    made = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    client.write_bytes(b"# an older rematch's client\n")
    (root / "bin" / "stale.txt").write_bytes(b"left by an older layout")
    assert folder(data) == root
    assert {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()} == made
    assert sorted(p.name for p in root.parent.iterdir()) == ["codex"]  # nothing half-made beside it
    before = client.stat().st_mtime_ns
    assert folder(data) == root and client.stat().st_mtime_ns == before  # whole already: not rewritten


def test_no_template_carries_a_client_and_a_stale_one_is_never_handed_on(tmp_path: Path) -> None:
    """One client, the core's: the plugins' templates hold none, and a template that still does (an
    installation built over an older one) gets the core's in its folder all the same."""
    import rematch_claude_code
    import rematch_codex
    from rematch_trace.live.harness_folder import made_whole

    for package, name in ((rematch_claude_code, "claude_plugin"), (rematch_codex, "codex_plugin")):
        template = Path(package.__file__).parent / name
        assert (template / "bin" / "rematch-hook").is_file() and not (template / "bin" / "rematch_hook.py").exists()
    template = tmp_path / "template"
    (template / "bin").mkdir(parents=True)
    (template / "bin" / "rematch_hook.py").write_text("# an older rematch's client\n")
    made = made_whole(template, "x", tmp_path / "data")
    assert (made / "bin" / "rematch_hook.py").read_bytes() == hook_client().read_bytes()


def test_the_bundled_command_denies_as_codex_reads_it(tmp_path: Path) -> None:
    """The folder copied as Codex copies it, its PreToolUse command run through ``sh -c``: a call
    the policy denies gets Codex's deny; the session's trace records it blocked."""
    root = tmp_path / "cache" / "rematch" / "0.1.0"
    shutil.copytree(folder(tmp_path / "made"), root)
    env = hook_env(tmp_path / "home", tmp_path / "data")
    # python3 on PATH is one with rematch installed (for the capture without a service).
    env.update(PLUGIN_ROOT=str(root), PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}")
    doc = json.loads((root / "hooks" / "hooks.json").read_text())
    command = doc["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    payload = {"session_id": SID, "turn_id": TURN, "transcript_path": str(tmp_path / "none.jsonl"),
               "cwd": str(tmp_path), "hook_event_name": "PreToolUse", "model": "gpt-rig",
               "permission_mode": "default", "tool_name": "Bash", "tool_input": {"command": DENIED},
               "tool_use_id": "call_x"}
    res = subprocess.run(["sh", "-c", command], input=orjson.dumps(payload), env=env, capture_output=True,
                         timeout=120)
    assert res.returncode == 0 and res.stderr == b""
    answer = orjson.loads(res.stdout)["hookSpecificOutput"]
    assert (answer["hookEventName"], answer["permissionDecision"]) == ("PreToolUse", "deny")
    end = doc["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
    subprocess.run(["sh", "-c", end], input=orjson.dumps({**payload, "hook_event_name": "SessionEnd"}), env=env,
                   capture_output=True, timeout=120)
    trace = read_jsonl(tmp_path / "data" / "traces" / f"{SID}.jsonl")
    assert [r["call_id"] for r in trace if r["ev"] == "tool_blocked"] == ["call_x"]


def test_rematch_hooks_folder_prints_each_harness_folder(tmp_path: Path) -> None:
    """``rematch hooks folder`` (Claude Code) and ``--harness codex``: the folder made whole where the
    hooks write (``$REMATCH_HOME``), its path alone on stdout, absolute; a harness without one is not offered (exit 2)."""
    from rematch_claude_code.folder import template as claude_template
    from rematch_trace.live.harness_folder import made_whole

    rematch = str(Path(sys.executable).parent / "rematch")
    env = {**hook_env(tmp_path / "home", Path("data")), "REMATCH_HOME": "data"}  # relative: printed absolute
    for args, name, made in (([], "claude_code", made_whole(claude_template(), "claude_code", tmp_path / "ref")),
                             (["--harness", "codex"], "codex", folder(tmp_path / "ref"))):
        res = subprocess.run([rematch, "hooks", "folder", *args], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=120)
        assert res.returncode == 0 and res.stderr == "", res.stderr
        printed = Path(res.stdout.strip())
        assert res.stdout == f"{printed}\n" and printed == tmp_path / "data" / "harness-plugins" / name
        assert {p.relative_to(printed): p.read_bytes() for p in printed.rglob("*") if p.is_file()} == {
            p.relative_to(made): p.read_bytes() for p in made.rglob("*") if p.is_file()}
    res = subprocess.run([rematch, "hooks", "folder", "--harness", "pi"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    # pi has no plugin folder (it takes rematch's extension): not offered, a usage error (issue 43).
    assert res.returncode == 2 and "is not one of 'claude_code', 'codex'" in res.stderr and res.stdout == ""
