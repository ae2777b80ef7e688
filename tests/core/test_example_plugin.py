"""The example plugin: installed through its entry point, and it passes the contract helper."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import rematch_toy
from rematch_trace.testing import check_plugin

DEMO = Path(__file__).resolve().parents[2] / "examples" / "transcripts" / "toy" / "demo.jsonl"


def test_installed_under_the_rematch_group() -> None:
    names = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="rematch")}
    assert names.get("toy") == "rematch_toy"


def test_contract_helper_over_the_demo(tmp_path: Path) -> None:
    [session] = check_plugin(rematch_toy, [DEMO], out=tmp_path)
    evs = [r["ev"] for r in session.records]
    assert evs[0] == "session_start" and evs[-1] == "session_shutdown"
    assert session.reasons == ["redirect"]
    assert {e["kind"] for e in session.events} >= {"session_start", "user_prompt", "pre_tool_use", "session_end"}
    shell = [e for e in session.events if e["kind"] == "pre_tool_use"]
    assert {e["action_type"] for e in shell} == {"shell_exec"}
    assert any("destructive_command" in e["risk_features"] for e in shell)


def test_contract_helper_checks_a_plugin_folder_template(tmp_path: Path) -> None:
    """The kit checks ``harness_plugin_template``'s folder: the launcher executable, hooks.json an object,
    no hook client of the template's own; a right one passes."""
    import json
    import types

    import pytest

    from rematch_trace import hookimpl
    from rematch_trace.testing import ContractError

    template = tmp_path / "template"

    def plugin() -> types.ModuleType:
        mod = types.ModuleType("rematch_toy_folder")
        for name in ("default_locations", "detect_source", "read_transcript", "to_trace_records"):
            setattr(mod, name, getattr(rematch_toy, name))

        @hookimpl
        def harness_plugin_template(harness: str) -> Path:
            return template

        mod.harness_plugin_template = harness_plugin_template  # type: ignore[attr-defined]
        return mod

    with pytest.raises(ContractError, match=r"(?s)not a folder"):
        check_plugin(plugin(), [DEMO], out=tmp_path / "o1")
    (template / "bin").mkdir(parents=True)
    (template / "hooks").mkdir()
    (template / "bin" / "rematch-hook").write_text("#!/bin/sh\n")
    (template / "hooks" / "hooks.json").write_text("[]")
    (template / "bin" / "rematch_hook.py").write_text("# a second client\n")
    with pytest.raises(ContractError) as err:
        check_plugin(plugin(), [DEMO], out=tmp_path / "o2")
    said = str(err.value)
    assert "not an executable file" in said and "not a JSON object" in said and "the core supplies it" in said
    (template / "bin" / "rematch-hook").chmod(0o755)
    (template / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {}}))
    (template / "bin" / "rematch_hook.py").unlink()
    check_plugin(plugin(), [DEMO], out=tmp_path / "o3")
