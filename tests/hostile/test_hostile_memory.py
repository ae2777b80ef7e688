"""A single line of hundreds of megabytes: skipped without being held, so memory stays bounded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hostile_gen import HARNESSES, cli_env, import_cmd, lines_for, path_for, sid_for, traces

LINE_MB = 300
#: Peak RSS allowed for the import process (an interpreter with the plugins is ~40 MB).
PEAK_MB = 150


def write_huge(path: Path, harness: str) -> None:
    """A valid transcript with one ``LINE_MB`` MiB line in the middle, streamed to disk."""
    lines = lines_for(harness)
    path.parent.mkdir(parents=True, exist_ok=True)
    chunk = b"y" * (1 << 20)
    with open(path, "wb") as f:
        for x in lines[:2]:
            f.write(orjson.dumps(x) + b"\n")
        f.write(b'{"type":"user","huge":"')
        for _ in range(LINE_MB):
            f.write(chunk)
        f.write(b'"}\n')
        for x in lines[2:]:
            f.write(orjson.dumps(x) + b"\n")


# Linux carries a process's peak RSS across exec: a child started straight from
# this (large) test process would report at least this process's size. A small
# trampoline interpreter starts the import and reads its peak with wait4.
_TRAMPOLINE = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(proc.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


@pytest.mark.parametrize("harness", HARNESSES)
def test_300mb_line_peak_rss_bounded(harness: str, tmp_path: Path) -> None:
    """Peak RSS of the import process itself, read with wait4 (this child's own, not every child's)."""
    src = path_for(tmp_path / "src", harness, sid_for(harness))
    write_huge(src, harness)
    out = tmp_path / "data"
    err_path = tmp_path / "stderr.txt"
    with open(err_path, "wb") as err:
        res = subprocess.run([sys.executable, "-c", _TRAMPOLINE, *import_cmd(out, src)], stdout=subprocess.PIPE,
                             stderr=err, env=cli_env(), check=True)
    code, maxrss_kb = (int(x) for x in res.stdout.split())
    proc = subprocess.CompletedProcess([], code)
    src.unlink()
    peak_mb = maxrss_kb / 1024
    stderr = err_path.read_bytes()
    assert proc.returncode == 1, stderr.decode()
    assert b"Traceback" not in stderr
    assert f"rematch: {src}:3: line longer than the 64 MiB limit; skipped".encode() in stderr
    assert peak_mb < PEAK_MB, f"peak RSS {peak_mb:.0f} MB importing a {LINE_MB} MB line"
    assert len(traces(out)) == 1
