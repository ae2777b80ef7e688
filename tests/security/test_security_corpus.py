"""Every corpus session gets an events file whose every line validates against the v1 schema."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

import rematch_claude_code
import rematch_codex
import rematch_omp
from rematch_trace.testing import synthesize_file

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"
MODULES = {"claude_code": rematch_claude_code, "codex": rematch_codex, "omp": rematch_omp}


def _files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for h in MODULES for p in (CORPUS / h).rglob("*.jsonl*") if p.is_file())


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads((ROOT / "docs" / "event-v1.schema.json").read_text()))


def test_corpus_present_when_required() -> None:
    if os.environ.get("REMATCH_REQUIRE_CORPUS") == "1":
        assert _files(), f"no corpus at {CORPUS}"
    elif not _files():
        pytest.skip("corpus absent")


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(CORPUS)))
def test_corpus_events_validate(path: Path, tmp_path: Path, validator: jsonschema.Draft202012Validator) -> None:
    harness = path.relative_to(CORPUS).parts[0]
    out = tmp_path / "out"
    sessions = synthesize_file(path, [MODULES[harness]], out=out, hint=harness)
    assert sessions
    files = {p.name for p in (out / "events").glob("*.jsonl")}
    assert len(files) == len(sessions)
    for s in sessions:
        assert s.events, f"{s.session_id}: no events"
        assert s.events[0]["kind"] == "session_start" and s.events[-1]["kind"] == "session_end"
        for i, e in enumerate(s.events):
            errors = [err.message for err in validator.iter_errors(e)]
            assert not errors, f"{s.session_id} event {i} ({e.get('kind')}): {errors}"
        # One pre_tool_use per tool call of the trace's paired results at least.
        calls = {r["call_id"] for r in s.records if r["ev"] == "tool_result" and r["args_hash"] is not None}
        pre = {e["source_tool_call_id"] for e in s.events if e["kind"] == "pre_tool_use"}
        assert calls <= pre
        ids = [e["event_id"] for e in s.events]
        assert len(ids) == len(set(ids))
