"""host/lazy_hooks.py: a plugin's hook in one line, its module imported on the first call."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from rematch_trace.host.facade import PluginFailure
from rematch_trace.host.lazy_hooks import lazy_hook
from rematch_trace.host.source import Source
from rematch_trace.testing import make_host


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A plugin package ``lazypkg`` with a module ``work`` that types calls and counts them."""
    pkg = tmp_path / "lazypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "work.py").write_text(
        "CALLS = []\n\n\ndef classify(tool):\n    CALLS.append(tool)\n"
        "    if tool == 'boom':\n        raise ValueError('no')\n    return 'network'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "lazypkg"
    for name in ("lazypkg", "lazypkg.work"):
        sys.modules.pop(name, None)


def test_the_module_is_imported_on_the_first_call_and_the_hook_is_routed(package: str) -> None:
    plugin = types.ModuleType("lazyplugin")
    plugin.classify_action = lazy_hook(package, "classify_action", ("tool",), "work:classify", "Types a call.")  # type: ignore[attr-defined]
    host = make_host([plugin])  # pluggy read the argument names and checked them against the hookspec
    assert f"{package}.work" not in sys.modules
    source = Source("lazy", Path("x.jsonl"), plugin="lazyplugin")
    assert host.action_type(source, "curl", {"url": "x"}) == "network"
    assert sys.modules[f"{package}.work"].CALLS == ["curl"]
    assert plugin.classify_action.__doc__ == "Types a call." and plugin.classify_action.__name__ == "classify_action"
    sys.modules[f"{package}.work"].classify = lambda tool: "shell_exec"  # looked up at each call
    assert host.action_type(source, "curl", None) == "shell_exec"


def test_a_failure_names_the_plugin(package: str) -> None:
    plugin = types.ModuleType("lazyplugin")
    plugin.classify_action = lazy_hook(package, "classify_action", ("tool",), "work:classify", "Types a call.")  # type: ignore[attr-defined]
    host = make_host([plugin])
    with pytest.raises(PluginFailure) as failed:
        host.action_type(Source("lazy", Path("x.jsonl"), plugin="lazyplugin"), "boom", None)
    assert failed.value.plugin == "lazyplugin" and failed.value.hook == "classify_action"


def test_names_are_checked() -> None:
    for hook, args in (("classify action", ("tool",)), ("classify_action", ("tool); import os; (",)),
                       ("classify_action", ("_load",))):
        with pytest.raises(ValueError, match="not a hook's or an argument's name"):
            lazy_hook("lazypkg", hook, args, "work:classify", "")
