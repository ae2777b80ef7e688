"""A ``ledger.sqlite`` that is a symbolic link (issue 29.6): refused, and nothing made beside its target.

SQLite makes a WAL database's ``-wal`` and ``-shm`` files beside the file it opens: followed,
a link would have every reading command write outside the data folder. Each command runs as a
process; the folder the link leads to must be byte for byte as it was.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from rematch_trace.store.ledger import Ledger, open_readonly

REMATCH = shutil.which("rematch", path=str(Path(sys.executable).parent)) or "rematch"
COMMANDS = {
    "sessions": ["sessions", "--out", "{data}"],
    "stats": ["stats", "--out", "{data}"],
    "flagged": ["flagged", "--out", "{data}"],
    "show": ["show", "s1", "--out", "{data}"],
    "audit": ["audit", "--out", "{data}"],
    "report": ["report", "--data", "{data}", "--out", "{tmp}/report"],
    "import": ["import", "{tmp}/empty", "--out", "{data}"],
    "watch": ["watch", "{tmp}/empty", "--out", "{data}"],
    "lake": ["lake", "migrate", "--out", "{data}"],
    "hooks-status": ["hooks", "status", "--settings", "{tmp}/settings.json", "--out", "{data}"],
}


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture
def linked(tmp_path: Path) -> tuple[Path, Path]:
    """A data folder whose ledger is a link to a real ledger in a folder outside it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    Ledger(outside / "ledger.sqlite").close()  # a real, empty ledger (WAL): its -wal and -shm gone on close
    data = tmp_path / "data"
    (data / "traces").mkdir(parents=True)
    (data / "traces" / "s1.jsonl").write_text("")
    (data / "ledger.sqlite").symlink_to(outside / "ledger.sqlite")
    (tmp_path / "empty").mkdir()
    return data, outside


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_symlinked_ledger_is_refused_in_one_line_and_nothing_is_made_outside(
        tmp_path: Path, linked: tuple[Path, Path], command: str) -> None:
    data, outside = linked
    before = _snapshot(outside)
    argv = [a.format(data=data, tmp=tmp_path) for a in COMMANDS[command]]
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMATCH_")} | {"HOME": str(tmp_path)}
    res = subprocess.run([REMATCH, *argv], capture_output=True, text=True, env=env, timeout=120)
    assert _snapshot(outside) == before, sorted(p.name for p in outside.iterdir())
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert res.stderr.count("\n") == 1 and "is a symbolic link" in res.stderr, res.stderr
    assert (data / "ledger.sqlite").is_symlink()


def test_the_ledger_reader_refuses_a_link_itself(linked: tuple[Path, Path]) -> None:
    data, outside = linked
    before = _snapshot(outside)
    with pytest.raises(sqlite3.OperationalError, match="symbolic link"):
        open_readonly(data / "ledger.sqlite")
    with pytest.raises(OSError):
        Ledger(data / "ledger.sqlite")  # the writer never followed one (O_NOFOLLOW)
    assert _snapshot(outside) == before
