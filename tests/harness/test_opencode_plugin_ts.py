"""rematch's opencode plugin as TypeScript: type-checked, linted, and its own tests run by node.

The tools (:mod:`ts_tools`) come from the npm registry into the rig's cache, node's types from the
pinned pi's packages (as the pi extension's test takes them). ``tsc`` checks the plugin and
``ts/opencode_plugin.test.ts`` with the pi extension's strict options and compiles them for node;
``eslint`` lints the plugin with typescript-eslint's recommended and strict rules; ``node --test``
runs the compiled tests, one of them against the real hook client judging in its own process.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ts_tools import ROOT, TsCheck, clean_env, ts_check

from rematch_trace.live.install import hook_client

HERE = Path(__file__).resolve().parent
PLUGIN = ROOT / "plugins" / "opencode" / "rematch_opencode" / "plugin" / "rematch.ts"
TESTS = HERE / "ts" / "opencode_plugin.test.ts"


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> TsCheck:
    """The plugin and its tests (node's types from the pinned pi's packages)."""
    return ts_check(PLUGIN, TESTS, tmp_path_factory.mktemp("ts-opencode"))


def test_the_plugin_type_checks(setup: TsCheck) -> None:
    """``tsc --noEmit`` with the strict options: no error."""
    res = setup.tsc(emit=False)
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_plugin_is_lint_clean(setup: TsCheck) -> None:
    """eslint with typescript-eslint's recommended and strict rules: no finding."""
    res = setup.eslint()
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_plugins_own_tests_pass_under_node(setup: TsCheck, tmp_path: Path) -> None:
    """tsc compiles the plugin and its tests; ``node --test`` runs them (see ts/opencode_plugin.test.ts)."""
    res = setup.tsc(emit=True)
    assert res.returncode == 0, res.stdout + res.stderr
    env = {**clean_env(tmp_path), "REMATCH_PYTHON": sys.executable, "REMATCH_CLIENT": str(hook_client()),
           "DATA": str(tmp_path / "data"), "REMATCH_LIVE_SERVICE": "0"}
    res = setup.node_test(env)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
