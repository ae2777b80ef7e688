"""The ``conversation_items`` hook in the plugin contract kit: the three plugins hold to it, a plugin
without it still passes (and its sessions say so), and an item of the wrong type is caught."""

from __future__ import annotations

import shutil
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rematch_claude_code
import rematch_codex
import rematch_gemini_cli
import rematch_omp
import rematch_opencode
import rematch_toy
from rematch_trace import hookimpl
from rematch_trace.host.conversation import Called, Returned, Said
from rematch_trace.host.source import RawRecord, Source
from rematch_trace.testing import ContractError, check_plugin, conversation_of

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "examples" / "transcripts" / "toy" / "demo.jsonl"
FILES = {
    "claude_code": (rematch_claude_code, "claude_code/projects/-Users-zawakin-agent-sample/7f2abd2d-7cfc-4447-9ddd-3ca8d14e02e9.jsonl"),
    "codex": (rematch_codex, "codex/sessions/2025/12/09/rollout-2025-12-09T19-55-16-019b04ae-b1c6-7c72-a134-a4c2de66058c.jsonl"),
    "omp": (rematch_omp, "omp/sessions/--home-dev-acme-api--/2026-08-22T11-00-00-000Z_0198d27b-5e03-7b8a-91c6-4fa2d83e0b57.jsonl"),
}


@pytest.mark.parametrize("harness", sorted(FILES))
def test_each_plugin_holds_to_the_conversation_contract(harness: str, corpus_dir: Path, tmp_path: Path) -> None:
    plugin, rel = FILES[harness]
    sessions = check_plugin(plugin, [corpus_dir / rel], out=tmp_path)
    items = conversation_of(corpus_dir / rel, [plugin])
    assert items is not None
    kinds = {type(i).__name__ for i in items}
    assert {"Session", "Said", "Called", "Returned"} <= kinds
    calls = {i.call_id for i in items if isinstance(i, Called)}
    assert calls and {i.call_id for i in items if isinstance(i, Returned)} <= calls
    assert {s.session_id for s in sessions} >= {i.session_id for i in items if type(i).__name__ == "Session"}


#: The two newest plugins' fixtures (no corpus of theirs): Gemini CLI's log and document, opencode's tree sessions.
FIXTURES = {
    "gemini_cli": (rematch_gemini_cli, ["gemini_cli/fixtures/session-2026-12-01T18-35-c0445b57.jsonl",
                                        "gemini_cli/fixtures/session-2025-06-30T10-02-5f0c2a7e.json"]),
    "opencode": (rematch_opencode, [
        "opencode/fixtures/tree/storage/session/a1b2c3d4e5f6/ses_0a0000000001AAAAAAAAAAAAAA.json",
        "opencode/fixtures/tree/storage/session/a1b2c3d4e5f6/ses_0a0000000002BBBBBBBBBBBBBB.json"]),
}


@pytest.mark.parametrize("harness", sorted(FIXTURES))
def test_gemini_cli_and_opencode_hold_to_the_conversation_contract(harness: str, tmp_path: Path) -> None:
    plugin, rels = FIXTURES[harness]
    paths = [ROOT / "tests" / rel for rel in rels]
    check_plugin(plugin, paths, out=tmp_path)
    for path in paths:
        items = conversation_of(path, [plugin])
        assert items is not None
        assert {"Session", "Said", "Called", "Returned"} <= {type(i).__name__ for i in items}
        calls = {i.call_id for i in items if isinstance(i, Called)}
        assert calls and {i.call_id for i in items if isinstance(i, Returned)} == calls


def test_a_plugin_without_the_hook_passes_and_its_sessions_say_so(tmp_path: Path) -> None:
    assert conversation_of(TOY, [rematch_toy]) is None
    check_plugin(rematch_toy, [TOY], out=tmp_path / "kit")
    src = tmp_path / "src"
    src.mkdir()
    shutil.copyfile(TOY, src / TOY.name)
    data = tmp_path / "data"
    run = [sys.executable, "-m", "rematch_trace.cli"]
    res = subprocess.run([*run, "import", str(src), "--data", str(data), "-q"], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    sid = next((data / "traces").glob("*.jsonl")).name[:-6]
    res = subprocess.run([*run, "show", sid, "--data", str(data), "--conversation"], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "NOTE: no conversation from this plugin (" in res.stdout
    # What the trace keeps is still shown.
    assert "user" in res.stdout


def _bad_plugin() -> types.ModuleType:
    """The toy plugin, with a conversation_items that gives an assistant text that is not a string."""
    mod = types.ModuleType("rematch_toy_bad")
    for name in ("default_locations", "detect_source", "read_transcript", "to_trace_records"):
        setattr(mod, name, getattr(rematch_toy, name))

    @hookimpl
    def conversation_items(source: Source, records: Iterator[RawRecord]) -> Iterator[Any]:
        for rec in records:
            yield Said("", None, "assistant", rec.value)  # a dict, not text: no Session first either

    mod.conversation_items = conversation_items  # type: ignore[attr-defined]
    return mod


def test_the_kit_catches_a_wrong_item(tmp_path: Path) -> None:
    bad = _bad_plugin()
    with pytest.raises(ContractError, match=r"Said\.text is dict"):
        conversation_of(TOY, [bad])
    with pytest.raises(ContractError, match=r"(?s)conversation_items: .*before its Session"):
        check_plugin(bad, [TOY], out=tmp_path)
