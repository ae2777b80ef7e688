"""``rematch hooks folder`` writes nothing through a link (issue 41): a symlinked ``harness-plugins/`` (or plugin
folder) pointing out of the data folder is refused, with one line saying why, and nothing lands there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REMATCH = [sys.executable, "-c", "import sys; from rematch_trace.cli import main; sys.argv[0] = 'rematch'; main()"]


def _folder(data: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMATCH_")}
    env["REMATCH_HOME"] = str(data)
    return subprocess.run([*REMATCH, "hooks", "folder"], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("linked", ["harness-plugins", "harness-plugins/claude_code"])
def test_a_linked_plugin_folder_is_refused(tmp_path: Path, linked: str) -> None:
    data, outside = tmp_path / "data", tmp_path / "outside"
    outside.mkdir()
    (data / linked).parent.mkdir(parents=True)
    (data / linked).symlink_to(outside, target_is_directory=True)
    res = _folder(data)
    assert res.returncode != 0 and "is a symbolic link" in res.stderr, (res.stdout, res.stderr)
    assert len(res.stderr.strip().splitlines()) == 1
    assert list(outside.iterdir()) == []  # nothing written outside the data folder
    (data / linked).unlink()
    ok = _folder(data)  # the link gone, the folder is made in the data folder
    assert ok.returncode == 0, ok.stderr
    made = Path(ok.stdout.strip())
    assert made.is_dir() and not made.is_symlink() and made.resolve().is_relative_to(data.resolve())
