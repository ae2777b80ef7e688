"""``rematch hooks install|uninstall`` on a ``settings.json`` that is a symbolic link (a dotfiles checkout).

The link stays a link: install and uninstall write through to its target (an atomic
replace of the target), and uninstall gives the target back its exact bytes.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import orjson
import pytest
from capture_helpers import REMATCH, hook_env

from rematch_trace.live.install import EVENTS

USER_SETTINGS = b'{\n  "model": "opus",\n  "permissions": {"allow": ["Bash(ls:*)"]}\n}\n'


def _hooks(settings: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = hook_env(settings.parent.parent, settings.parent.parent / "data")
    return subprocess.run([REMATCH, "hooks", *args, "--settings", str(settings)], capture_output=True, text=True,
                          env=env, timeout=60)


@pytest.mark.parametrize("relative", [False, True], ids=["absolute-link", "relative-link"])
def test_install_and_uninstall_write_through_a_symlinked_settings_file(tmp_path: Path, relative: bool) -> None:
    dotfiles = tmp_path / "dotfiles" / "claude"
    dotfiles.mkdir(parents=True)
    target = dotfiles / "settings.json"
    target.write_bytes(USER_SETTINGS)
    os.chmod(target, 0o640)
    cfg = tmp_path / "claude-config"
    cfg.mkdir()
    link = cfg / "settings.json"
    link.symlink_to(os.path.relpath(target, cfg) if relative else target)
    pointed = os.readlink(link)

    res = _hooks(link, "install")
    assert res.returncode == 0, res.stderr
    assert link.is_symlink() and os.readlink(link) == pointed  # the dotfiles link kept
    doc = orjson.loads(target.read_bytes())  # the hooks went into the target
    assert set(doc["hooks"]) == {e for e, _a, _m in EVENTS} and doc["model"] == "opus"
    assert os.stat(target).st_mode & 0o777 == 0o640
    assert sorted(p.name for p in dotfiles.iterdir()) == ["settings.json"]  # no temporary file left there

    res = _hooks(link, "uninstall")
    assert res.returncode == 0, res.stderr
    assert link.is_symlink() and os.readlink(link) == pointed
    assert target.read_bytes() == USER_SETTINGS  # the exact bytes of before
    assert sorted(p.name for p in cfg.iterdir()) == ["settings.json"]  # no backup left


def test_uninstall_through_a_link_that_had_no_target_leaves_the_link_dangling_again(tmp_path: Path) -> None:
    cfg = tmp_path / "claude-config"
    cfg.mkdir()
    target = tmp_path / "dotfiles" / "settings.json"
    target.parent.mkdir()
    link = cfg / "settings.json"
    link.symlink_to(target)  # the dotfiles checkout has no settings yet
    assert _hooks(link, "install").returncode == 0
    assert link.is_symlink() and orjson.loads(target.read_bytes())["hooks"]
    res = _hooks(link, "uninstall")
    assert res.returncode == 0, res.stderr
    assert link.is_symlink() and os.readlink(link) == str(target) and not target.exists()
