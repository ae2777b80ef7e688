"""rematch's pi/omp extension as TypeScript: type-checked, linted, and its own tests run by node.

The tools (:mod:`ts_tools`) and pi's package (whose types the extension is checked against) come
from the npm registry into the rig's cache, outside the checkout. ``tsc`` checks the extension and
``ts/extension.test.ts`` with the strict options and compiles them for node; ``eslint`` lints the
extension with typescript-eslint's recommended and strict rules; ``node --test`` runs the compiled
tests against a real ``rematch serve`` and against a data folder with none (the fallback).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rig_install import InstallError, binary, pinned, prefix_of
from ts_tools import tools, unavailable

from rematch_trace.live import paths
from rematch_trace.live.hook_check import service_state

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
EXTENSION = ROOT / "plugins" / "omp" / "rematch_omp" / "extension" / "rematch.ts"
TESTS = HERE / "ts" / "extension.test.ts"
#: The compiler's checks beyond ``strict``.
OPTIONS = {"strict": True, "noUnusedLocals": True, "noUnusedParameters": True, "noImplicitReturns": True,
           "noFallthroughCasesInSwitch": True, "noImplicitOverride": True, "target": "es2022",
           "module": "commonjs", "moduleResolution": "node10", "esModuleInterop": True, "skipLibCheck": True}
ESLINT_CONFIG = """\
import tseslint from "typescript-eslint";

export default tseslint.config(...tseslint.configs.recommended, ...tseslint.configs.strict);
"""


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(the tools' prefix, pi's node_modules, a folder with the compiled output under ``out/``)."""
    if shutil.which("node") is None:
        unavailable("node is not installed")
    try:
        prefix = tools()
        binary(pinned("pi"))
    except (InstallError, OSError) as exc:
        unavailable(f"the TypeScript tools or pi are not available: {exc}")
        raise
    work = tmp_path_factory.mktemp("ts")
    return prefix, prefix_of(pinned("pi")) / "node_modules", work


def _tsconfig(work: Path, modules: Path, emit: bool) -> Path:
    opts = dict(OPTIONS, baseUrl="/", paths={"@mariozechner/pi-coding-agent": [str(modules / "@mariozechner" /
                                                                                   "pi-coding-agent")]},
                typeRoots=[str(modules / "@types")], types=["node"])
    if emit:
        opts.update(outDir=str(work / "out"), rootDir=str(ROOT))
    else:
        opts["noEmit"] = True
    path = work / ("tsconfig.emit.json" if emit else "tsconfig.json")
    path.write_text(json.dumps({"compilerOptions": opts, "files": [str(EXTENSION), str(TESTS)]}))
    return path


def test_the_extension_type_checks(setup: tuple[Path, Path, Path]) -> None:
    """``tsc --noEmit`` with the strict options, against pi's own types: no error."""
    prefix, modules, work = setup
    res = subprocess.run([str(prefix / "node_modules" / ".bin" / "tsc"), "-p", str(_tsconfig(work, modules, False))],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_extension_is_lint_clean(setup: tuple[Path, Path, Path]) -> None:
    """eslint with typescript-eslint's recommended and strict rules: no finding."""
    prefix, _modules, work = setup
    lint = work / "lint"
    lint.mkdir(exist_ok=True)
    (lint / "eslint.config.mjs").write_text(ESLINT_CONFIG)
    if not (lint / "node_modules").exists():
        (lint / "node_modules").symlink_to(prefix / "node_modules")
    shutil.copy(EXTENSION, lint / "rematch.ts")
    res = subprocess.run([str(prefix / "node_modules" / ".bin" / "eslint"), "--max-warnings=0", "rematch.ts"],
                         cwd=lint, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr


def _serve(data: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "rematch_trace.live.service", "--data", str(data), "--quiet"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=_env(data.parent))
    end = time.monotonic() + 60
    while not paths.events_socket(data).exists():
        assert proc.poll() is None and time.monotonic() < end, "rematch serve did not listen"
        time.sleep(0.05)
    return proc


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REMATCH_", "CLAUDE_"))}
    env["HOME"] = str(home)  # no policy of the caller's
    return env


def test_the_extensions_own_tests_pass_under_node(setup: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """tsc compiles the extension and its tests; ``node --test`` runs them (see ts/extension.test.ts)."""
    prefix, modules, work = setup
    res = subprocess.run([str(prefix / "node_modules" / ".bin" / "tsc"), "-p", str(_tsconfig(work, modules, True))],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    served, unserved, swapped = tmp_path / "served", tmp_path / "unserved", tmp_path / "swapped"
    short, long = tmp_path / "d", tmp_path / ("x" * 120)
    env = {**_env(tmp_path), "REMATCH_PYTHON": sys.executable, "SERVED_DATA": str(served),
           "UNSERVED_DATA": str(unserved), "SWAPPED_DATA": str(swapped),
           "SHORT_DATA": str(short), "LONG_DATA": str(long),
           "EXPECT_RUN_SHORT": str(paths.run_dir(short)), "EXPECT_RUN_LONG": str(paths.run_dir(long)),
           "PI_SCRIPT": str(binary(pinned("pi"))), "PI_VERSION": pinned("pi").version,
           "REPLY_CASES": str(HERE / "ts" / "reply_cases.json")}
    service, other = _serve(served), _serve(swapped)
    try:
        res = subprocess.run(["node", "--test", str(work / "out" / "tests" / "harness" / "ts" / "extension.test.js")],
                             capture_output=True, text=True, timeout=300, env=env)
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
