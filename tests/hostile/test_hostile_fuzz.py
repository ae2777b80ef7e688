"""The atheris fuzz targets: each runs for a bounded time here, and the kept corpus replays as regressions.

Longer runs: see docs/fuzzing.md.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fuzz_targets import TARGETS

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "fuzz_corpus"
#: Per target: a short coverage-guided run in the test command.
SECONDS = 2
RUNS = 20000


def corpus_files(target: str) -> list[Path]:
    """The kept inputs of one target."""
    d = CORPUS / target
    return sorted(p for p in d.iterdir() if p.is_file()) if d.is_dir() else []


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_fuzz_target_runs_bounded(target: str, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    if (CORPUS / target).is_dir():
        shutil.copytree(CORPUS / target, corpus)  # the fuzzer adds to it: never to the kept one
    else:
        corpus.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMATCH_")}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    env["REMATCH_FUZZ_TMP"] = str(tmp_path)
    proc = subprocess.run(
        [sys.executable, str(HERE / "fuzz_targets.py"), target, f"-atheris_runs={RUNS}",
         f"-max_total_time={SECONDS}", "-max_len=4096", f"-artifact_prefix={tmp_path}/", str(corpus)],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120, errors="replace",
    )
    crashes = list(tmp_path.glob("crash-*")) + list(tmp_path.glob("timeout-*"))
    assert proc.returncode == 0 and not crashes, proc.stderr[-4000:]
    assert "Done" in proc.stderr


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_fuzz_corpus_replays(target: str) -> None:
    files = corpus_files(target)
    assert files, f"no kept corpus for {target} under {CORPUS / target}"
    for p in files:
        TARGETS[target](p.read_bytes())
