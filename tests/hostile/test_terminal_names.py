"""File names and ids reach the terminal escaped: no escape sequence, forged line or bidi override gets through.

Driven through the ``rematch`` CLI as a process, with a transcript file named with a
clear-screen sequence, a newline (followed by a forged ``rematch:`` line) and U+202E.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REMATCH = shutil.which("rematch", path=str(Path(sys.executable).parent)) or "rematch"
#: A transcript's file name as an attacker would choose it.
EVIL = "evil\x1b[2J\nrematch: all clear \u202etxt.jsonl"
#: How the terminal must show it: the one escaped spelling.
SHOWN = "evil\\u001b[2J\\u000arematch: all clear \\u202etxt.jsonl"
RAW = (b"\x1b", "\u202e".encode(), b"\x9b", "\U000e0041".encode())


@pytest.fixture
def evil_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / EVIL).write_text("not json at all\n")  # skipped: its name is printed
    return folder


def _env(tmp_path: Path) -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("REMATCH_")} | {"HOME": str(tmp_path)}


def _clean(stderr: bytes) -> str:
    for raw in RAW:
        assert raw not in stderr, stderr
    return stderr.decode()


def test_import_names_a_hostile_file_in_one_escaped_line(tmp_path: Path, evil_folder: Path) -> None:
    res = subprocess.run([REMATCH, "import", str(evil_folder), "--out", str(tmp_path / "data")],
                         capture_output=True, env=_env(tmp_path), timeout=120)
    err = _clean(res.stderr)
    assert f"rematch: {evil_folder / SHOWN.split('/')[-1]}: skipped:" in err, err
    # The newline in the name forged no line of its own.
    assert not any(line.startswith("rematch: all clear") for line in err.splitlines()), err


def test_watch_names_a_hostile_file_in_one_escaped_line(tmp_path: Path, evil_folder: Path) -> None:
    log = tmp_path / "watch.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen([REMATCH, "watch", str(evil_folder), "--out", str(tmp_path / "data"), "-v"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                env=_env(tmp_path), start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while b"caught up" not in log.read_bytes():
                assert proc.poll() is None and time.monotonic() < deadline, log.read_bytes()
                time.sleep(0.05)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    text = _clean(log.read_bytes())
    assert f"{SHOWN}: skipped:" in text, text
    assert not any(line.startswith("rematch: all clear") for line in text.splitlines()), text


@pytest.mark.parametrize("argv", [["watch", "{bad}"], ["import", "{bad}"], ["show", "{name}"], ["audit", "{name}"]],
                         ids=["watch", "import", "show", "audit"])
def test_an_error_naming_a_hostile_path_or_id_is_one_escaped_line(tmp_path: Path, evil_folder: Path,
                                                                 argv: list[str]) -> None:
    data = tmp_path / "data"
    (data / "traces").mkdir(parents=True)
    (data / "traces" / "s1.jsonl").write_text("")  # something to read, so the lookup runs
    bad = str(tmp_path / "missing" / EVIL)
    args = [a.format(bad=bad, name=EVIL) for a in argv] + ["--out", str(data)]
    res = subprocess.run([REMATCH, *args], capture_output=True, env=_env(tmp_path), timeout=120)
    assert res.returncode != 0
    err = _clean(res.stderr)
    assert len(err.strip().splitlines()) == 1 and "\\u001b[2J\\u000arematch: all clear \\u202e" in err, err
