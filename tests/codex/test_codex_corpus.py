"""Every real Codex rollout in the shared corpus imports, and its trace adds up.

The expected counts are computed here, straight from the raw JSON lines and
with rules of this file's own (never the plugin's code): Codex's own
``event_msg/user_message`` mirror for inputs, output lines for tool results,
the last cumulative ``total_token_usage`` for tokens, and so on.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from codex_fixtures import source_of, split_run, synth, translate

from rematch_codex import discover
from rematch_trace.host.source import RawRecord
from rematch_trace.testing import validate_trace

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "codex"
FILES = sorted(CORPUS.rglob("rollout-*.jsonl*")) if CORPUS.is_dir() else []

_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call", "tool_search_call"}
_OUTPUTS = {"function_call_output", "custom_tool_call_output", "tool_search_output"}


def _uuid7_ms(value: str) -> int | None:
    hexed = value.replace("-", "")
    if len(hexed) != 32 or hexed[12] != "7":
        return None
    return int(hexed[:12], 16)


def _iso_ms(value: str) -> int:
    return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)


def _output_failed(text: str) -> bool:
    """Did a tool output say it failed? (Written apart from the plugin, on purpose.)"""
    if text.startswith('{"output"'):
        code = json.loads(text).get("metadata", {}).get("exit_code", 0)
        return code != 0
    for pattern in (r"\AExit code: (\d+)", r"\AChunk ID: [^\n]*\n[^\n]*\nProcess exited with code (\d+)"):
        m = re.search(pattern, text)
        if m:
            return int(m.group(1)) != 0
    return text.lower().startswith(
        (
            "failed in sandbox",
            "patch rejected by user",
            "exec command rejected by user",
            "apply_patch verification failed",
            "script failed",
            "tool call error",
            "command timed out",
        )
    ) or "aborted by user" in text[:200]


def expected_counts(path: Path) -> dict[str, Any]:
    """What the rollout implies, counted over its raw lines."""
    lines = [json.loads(raw) for raw in path.read_bytes().splitlines() if raw.strip()]
    metas = [ln["payload"] for ln in lines if ln.get("type") == "session_meta"]
    legacy = not metas
    own_id = metas[0]["id"] if metas else lines[0]["id"]
    # A fork/subagent copies its parent's history after a foreign session_meta; its own
    # work starts with the first turn whose (UUIDv7) id postdates the session's creation.
    inherited_until = 0
    if any(m.get("id") != own_id for m in metas):
        created = _iso_ms(metas[0]["timestamp"])
        for i, ln in enumerate(lines):
            p = ln.get("payload") or {}
            tid = p.get("turn_id") if isinstance(p, dict) else None
            ms = _uuid7_ms(tid) if isinstance(tid, str) else None
            if ms is not None and ms >= created - 1000 and i > 1:
                inherited_until = i
                break
    own = lines[inherited_until:]
    base: dict[str, int] = {}
    for ln in lines[:inherited_until]:
        p = ln.get("payload") or {}
        if p.get("type") == "token_count" and p.get("info"):
            seen = p["info"]["total_token_usage"]
            if seen["total_tokens"] > base.get("total_tokens", -1):
                base = seen

    def item(ln: dict[str, Any]) -> dict[str, Any]:
        return ln if legacy else (ln.get("payload") if ln.get("type") == "response_item" else {}) or {}

    if legacy:
        prompts = [
            c["text"]
            for ln in own
            if ln.get("type") == "message" and ln.get("role") == "user"
            for c in ln["content"]
            if not c["text"].startswith("<")
        ]
    else:
        prompts = [
            ln["payload"]["message"]
            for ln in own
            if ln.get("type") == "event_msg" and ln["payload"].get("type") == "user_message"
        ]
    outputs = [item(ln) for ln in own if item(ln).get("type") in _OUTPUTS]
    calls = [item(ln) for ln in own if item(ln).get("type") in _CALLS]
    searches = [c for c in calls if c["type"] == "web_search_call"]
    failed = 0
    patch_failed = {
        ln["payload"]["call_id"]
        for ln in own
        if ln.get("type") == "event_msg"
        and ln["payload"].get("type") == "patch_apply_end"
        and ln["payload"].get("success") is False
    }
    for out in outputs:
        raw = out.get("output")
        text = raw if isinstance(raw, str) else "\n".join(c.get("text", "") for c in raw or [] if isinstance(c, dict))
        failed += _output_failed(text) or out["call_id"] in patch_failed
    aborts = [i for i, ln in enumerate(own) if (ln.get("payload") or {}).get("type") == "turn_aborted"]
    prompt_lines = [
        i for i, ln in enumerate(own) if (ln.get("payload") or {}).get("type") == "user_message"
    ]
    interrupts = sum(1 for a in aborts if any(i > a for i in prompt_lines))
    # Model per model response: the latest turn_context before it; count the switches.
    models: list[str] = []
    current = None
    for ln in own:
        if ln.get("type") == "turn_context":
            current = ln["payload"].get("model")
        elif (
            item(ln).get("type") in {"reasoning", "function_call", "custom_tool_call"}
            or (item(ln).get("type") == "message" and item(ln).get("role") == "assistant")
        ) and current and (not models or models[-1] != current):
            models.append(current)
    last_total: dict[str, int] = {}
    for ln in own:
        p = ln.get("payload") or {}
        if p.get("type") == "token_count" and p.get("info"):
            last_total = p["info"]["total_token_usage"]
    return {
        "session_id": own_id,
        "inputs": len(prompts),
        "tool_results": len(outputs) + len(searches),
        "calls": len(calls),
        "tool_errors": failed,
        "interrupts": interrupts,
        "model_changes": max(0, len(models) - 1),
        "tokens": last_total.get("total_tokens", 0) - base.get("total_tokens", 0),
        "cached": last_total.get("cached_input_tokens", 0) - base.get("cached_input_tokens", 0),
        "sub": isinstance(metas[0].get("source"), dict) and "subagent" in metas[0]["source"] if metas else False,
    }


@pytest.fixture(params=FILES, ids=[p.name[:40] for p in FILES])
def rollout(request: pytest.FixtureRequest, corpus_dir: Path) -> Path:
    path: Path = request.param
    return path


def test_corpus_is_present(corpus_dir: Path) -> None:
    assert FILES, f"no Codex rollouts under {CORPUS}"


def test_corpus_file_imports_and_adds_up(rollout: Path) -> None:
    exp = expected_counts(rollout)
    sessions = synth(rollout)
    assert len(sessions) == 1, "one rollout is one session"
    (s,) = sessions
    assert validate_trace(s.records) == []
    assert s.session_id == exp["session_id"]
    assert s.agent_kind == ("sub" if exp["sub"] else "main")
    recs = s.records
    inputs = [r for r in recs if r["ev"] == "input"]
    results = [r for r in recs if r["ev"] == "tool_result"]
    ends = [r for r in recs if r["ev"] == "turn_end"]
    assert len(inputs) == exp["inputs"]
    assert exp["calls"] == exp["tool_results"], "every corpus call has its output"
    assert len(results) == exp["tool_results"]
    assert len({r["call_id"] for r in results}) == len(results)
    assert sum(r["is_error"] for r in results) == exp["tool_errors"]
    assert sum(r["prelabel"] == "interrupt" for r in inputs) == exp["interrupts"]
    assert sum(r["ev"] == "model_change" for r in recs) == exp["model_changes"]
    assert sum(e["usage"]["totalTokens"] for e in ends) == exp["tokens"]
    assert sum(e["usage"]["cacheRead"] for e in ends) == exp["cached"]
    # visible_entries are the offered rematch skills (a rematch.json beside the skill file): the
    # corpus's catalogs list other people's skills, on other machines, so none is one here.
    assert recs[0]["visible_entries"] == []


def test_corpus_file_resumes_identically(rollout: Path) -> None:
    source = source_of(rollout)
    records = [r for r in discover.read(source, 0) if isinstance(r, RawRecord)]
    full = translate(rollout)
    for cut in sorted({1, len(records) // 3, len(records) // 2, len(records) - 1}):
        assert split_run(source, records, cut) == full, f"differs when paused after {cut} records"
