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
