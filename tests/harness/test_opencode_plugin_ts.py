"""rematch's opencode plugin as TypeScript: type-checked, linted, and its own tests run by node.

The tools (:mod:`ts_tools`) come from the npm registry into the rig's cache, node's types from the
pinned pi's packages (as the pi extension's test takes them). ``tsc`` checks the plugin and
``ts/opencode_plugin.test.ts`` with the pi extension's strict options and compiles them for node;
``eslint`` lints the plugin with typescript-eslint's recommended and strict rules; ``node --test``
runs the compiled tests, one of them against the real hook client judging in its own process.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rig_install import InstallError, binary, pinned, prefix_of
from test_extension_ts import ESLINT_CONFIG, OPTIONS, _env
from ts_tools import tools, unavailable

from rematch_trace.live.install import hook_client

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PLUGIN = ROOT / "plugins" / "opencode" / "rematch_opencode" / "plugin" / "rematch.ts"
TESTS = HERE / "ts" / "opencode_plugin.test.ts"


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(the tools' prefix, the node_modules with node's types, a folder for the output)."""
    if shutil.which("node") is None:
        unavailable("node is not installed")
    try:
        prefix = tools()
        binary(pinned("pi"))
    except (InstallError, OSError) as exc:
        unavailable(f"the TypeScript tools or pi (node's types) are not available: {exc}")
        raise
    return prefix, prefix_of(pinned("pi")) / "node_modules", tmp_path_factory.mktemp("ts-opencode")


def _tsconfig(work: Path, modules: Path, emit: bool) -> Path:
    opts = dict(OPTIONS, typeRoots=[str(modules / "@types")], types=["node"])
    if emit:
        opts.update(outDir=str(work / "out"), rootDir=str(ROOT))
    else:
        opts["noEmit"] = True
    path = work / ("tsconfig.emit.json" if emit else "tsconfig.json")
    path.write_text(json.dumps({"compilerOptions": opts, "files": [str(PLUGIN), str(TESTS)]}))
    return path


def test_the_plugin_type_checks(setup: tuple[Path, Path, Path]) -> None:
    """``tsc --noEmit`` with the strict options: no error."""
    prefix, modules, work = setup
    res = subprocess.run([str(prefix / "node_modules" / ".bin" / "tsc"), "-p", str(_tsconfig(work, modules, False))],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_plugin_is_lint_clean(setup: tuple[Path, Path, Path]) -> None:
    """eslint with typescript-eslint's recommended and strict rules: no finding."""
    prefix, _modules, work = setup
    lint = work / "lint"
    lint.mkdir(exist_ok=True)
    (lint / "eslint.config.mjs").write_text(ESLINT_CONFIG)
    if not (lint / "node_modules").exists():
        (lint / "node_modules").symlink_to(prefix / "node_modules")
    shutil.copy(PLUGIN, lint / "rematch.ts")
    res = subprocess.run([str(prefix / "node_modules" / ".bin" / "eslint"), "--max-warnings=0", "rematch.ts"],
                         cwd=lint, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_plugins_own_tests_pass_under_node(setup: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """tsc compiles the plugin and its tests; ``node --test`` runs them (see ts/opencode_plugin.test.ts)."""
    prefix, modules, work = setup
    res = subprocess.run([str(prefix / "node_modules" / ".bin" / "tsc"), "-p", str(_tsconfig(work, modules, True))],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    env = {**_env(tmp_path), "REMATCH_PYTHON": sys.executable, "REMATCH_CLIENT": str(hook_client()),
           "DATA": str(tmp_path / "data"), "REMATCH_LIVE_SERVICE": "0"}
    res = subprocess.run(["node", "--test", str(work / "out" / "tests" / "harness" / "ts" / "opencode_plugin.test.js")],
                         capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
