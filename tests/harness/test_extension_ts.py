"""rematch's pi/omp extension as TypeScript: type-checked, linted, and its own tests run by node.

The tools (:mod:`ts_tools`) and pi's package (whose types the extension is checked against) come
from the npm registry into the rig's cache, outside the checkout. ``tsc`` checks the extension and
``ts/extension.test.ts`` with the strict options and compiles them for node; ``eslint`` lints the
extension with typescript-eslint's recommended and strict rules; ``node --test`` runs the compiled
tests against a real ``rematch serve`` and against a data folder with none (the fallback).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rig_install import binary, pinned
from ts_tools import ROOT, TsCheck, clean_env, ts_check

from rematch_trace.live import paths
from rematch_trace.live.hook_check import service_state

HERE = Path(__file__).resolve().parent
EXTENSION = ROOT / "plugins" / "omp" / "rematch_omp" / "extension" / "rematch.ts"
TESTS = HERE / "ts" / "extension.test.ts"


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> TsCheck:
    """The extension and its tests, checked against pi's own types (``@mariozechner/pi-coding-agent``)."""
    pi_types = {"baseUrl": "/", "paths": {"@mariozechner/pi-coding-agent": ["{modules}/@mariozechner/pi-coding-agent"]}}
    return ts_check(EXTENSION, TESTS, tmp_path_factory.mktemp("ts"), **pi_types)


def test_the_extension_type_checks(setup: TsCheck) -> None:
    """``tsc --noEmit`` with the strict options, against pi's own types: no error."""
    res = setup.tsc(emit=False)
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_extension_is_lint_clean(setup: TsCheck) -> None:
    """eslint with typescript-eslint's recommended and strict rules: no finding."""
    res = setup.eslint()
    assert res.returncode == 0, res.stdout + res.stderr


def _serve(data: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "rematch_trace.live.service", "--data", str(data), "--quiet"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=clean_env(data.parent))
    end = time.monotonic() + 60
    while not paths.events_socket(data).exists():
        assert proc.poll() is None and time.monotonic() < end, "rematch serve did not listen"
        time.sleep(0.05)
    return proc


def test_the_extensions_own_tests_pass_under_node(setup: TsCheck, tmp_path: Path) -> None:
    """tsc compiles the extension and its tests; ``node --test`` runs them (see ts/extension.test.ts)."""
    res = setup.tsc(emit=True)
    assert res.returncode == 0, res.stdout + res.stderr
    served, unserved, swapped = tmp_path / "served", tmp_path / "unserved", tmp_path / "swapped"
    short, long = tmp_path / "d", tmp_path / ("x" * 120)
    env = {**clean_env(tmp_path), "REMATCH_PYTHON": sys.executable, "SERVED_DATA": str(served),
           "UNSERVED_DATA": str(unserved), "SWAPPED_DATA": str(swapped),
           "SHORT_DATA": str(short), "LONG_DATA": str(long),
           "EXPECT_RUN_SHORT": str(paths.run_dir(short)), "EXPECT_RUN_LONG": str(paths.run_dir(long)),
           "PI_SCRIPT": str(binary(pinned("pi"))), "PI_VERSION": pinned("pi").version,
           "REPLY_CASES": str(HERE / "ts" / "reply_cases.json")}
    service, other = _serve(served), _serve(swapped)
    try:
        res = setup.node_test(env)
    finally:
        for proc in (service, other):
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
        # The extension started a service for the folder that had none: stopped by its pid.
        running, pid = service_state(unserved)
        if running and pid:
            os.kill(pid, signal.SIGTERM)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    log = unserved / "live" / "errors.log"
    assert not log.exists() or "event lost" not in log.read_text(), log.read_text()
    # The lone surrogate's call went the hand-over path (the service's codec refuses it), and was blocked there.
    assert "handed to rematch-hook: not taken: the service answered invalid_utf8" in \
        (served / "live" / "errors.log").read_text()
