"""Every omp file in the shared corpus imports, with the counts its source implies.

The expected counts are computed here straight from the raw JSON lines, with this
test's own active-branch walk, never through the plugin's code.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import rematch_omp

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "omp"
REQUIRED = os.environ.get("REMATCH_REQUIRE_CORPUS") == "1"


def _files() -> list[Path]:
    if not CORPUS.is_dir():
        if REQUIRED:
            raise RuntimeError(f"REMATCH_REQUIRE_CORPUS=1 but {CORPUS} is missing")
        return []
    return sorted(p for p in CORPUS.rglob("*") if p.name.endswith((".jsonl", ".jsonl.gz")))


FILES = _files()
pytestmark = pytest.mark.skipif(not FILES, reason=f"no omp corpus at {CORPUS}")

# Counts the format notes (../shared/formats/omp-format.md §9) state for the real files.
DOCUMENTED = {
    "d703a1a9-1b7b-4fb1-b512-c9738b1fe617": {"aborts": 21, "errors": 19},
    "ffae836b-9420-4060-ac13-7745215f90ff": {"aborts": 18, "errors": 12},
}


def _active_path(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the entries on the branch ending at the last entry (independent walk)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    values = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if isinstance(v, dict) and not (i == 0 and v.get("type") == "title"):
            values.append(v)
    head, entries = values[0], values[1:]
    assert head["type"] == "session"
    if (head.get("version") or 1) < 2:
        return head, entries
    by_id = {e["id"]: e for e in entries if isinstance(e.get("id"), str)}
    nodes = [e for e in entries if isinstance(e.get("id"), str)]
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    cur = nodes[-1] if nodes else None
    while cur is not None and cur["id"] not in seen:
        seen.add(cur["id"])
        chain.append(cur)
        cur = by_id.get(cur.get("parentId"))  # type: ignore[arg-type]
    return head, chain[::-1]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b["text"] for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def _kept(text: str) -> bool:
    s = text.lstrip()
    if not s or s[0] not in "/!%":
        return True
    return s.startswith("/skill:") or s.lower().startswith("/rematch mark ")


def expected_counts(path: Path) -> dict[str, Any]:
    """What the trace of ``path`` must count, from the raw lines."""
    head, chain = _active_path(path)
    c: Counter[str] = Counter()
    prev_model = None
    for e in chain:
        if e.get("type") == "custom_message" and e.get("customType") == "skill-prompt" and e.get("attribution") != "agent":
            c["inputs"] += 1
        if e.get("type") != "message" or not isinstance(e.get("message"), dict):
            continue
        m = e["message"]
        role = m.get("role")
        if role == "user" and m.get("attribution") != "agent" and _kept(_text(m.get("content"))):
            c["inputs"] += 1
        elif role == "toolResult" and isinstance(m.get("toolCallId"), str):
            c["tool_results"] += 1
            c["errors"] += m.get("isError") is True
        elif role == "assistant":
            c["turns"] += 1
            c["aborts"] += m.get("stopReason") == "aborted"
            model = (m.get("provider"), m.get("model"))
            if m.get("model"):
                if prev_model is not None and model != prev_model:
                    c["model_changes"] += 1
                prev_model = model
    return {"session_id": head["id"], **{k: c[k] for k in ("inputs", "tool_results", "errors", "aborts", "model_changes", "turns")}}


def trace_counts(records: list[dict[str, Any]]) -> dict[str, int]:
    """The same counts read off a synthesized trace."""
    evs = Counter(r["ev"] for r in records)
    return {
        "inputs": evs["input"],
        "tool_results": evs["tool_result"],
        "errors": sum(1 for r in records if r["ev"] == "tool_result" and r["is_error"]),
        "aborts": sum(1 for r in records if r["ev"] == "turn_end" and r["stop_reason"] == "aborted"),
        "model_changes": evs["model_change"],
        "turns": evs["turn_end"],
    }


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_corpus_file_imports_with_the_counts_its_source_implies(path: Path) -> None:
    from rematch_trace.testing import synthesize_file, validate_trace

    sessions = synthesize_file(path, [rematch_omp], hint="omp")
    want = expected_counts(path)
    assert [s.session_id for s in sessions] == [want.pop("session_id")]  # no lost session
    (s,) = sessions
    assert validate_trace(s.records) == []
    assert trace_counts(s.records) == want
    # A transcript inside another session's artifacts folder is a subagent's.
    parent_file = path.parent.parent / (path.parent.name + ".jsonl")
    assert s.agent_kind == ("sub" if parent_file.is_file() else "main")
    for key, counts in DOCUMENTED.items():
        if key in path.name:
            assert {k: want[k] for k in counts} == counts
    # Re-importing gives the same trace, byte for byte.
    again = synthesize_file(path, [rematch_omp], hint="omp")
    assert [json.dumps(r) for r in again[0].records] == [json.dumps(r) for r in s.records]


def test_every_corpus_file_is_claimed_by_the_harness_that_wrote_it_alone() -> None:
    """Named by path, a file that starts with omp's title slot is omp's, any other pi's (the format is one)."""
    import rematch_pi

    for path in FILES:
        head = path.read_bytes()[:4096]
        wrote = "omp" if json.loads(head.split(b"\n", 1)[0]).get("type") == "title" else "pi"
        mine, theirs = (rematch_omp, rematch_pi) if wrote == "omp" else (rematch_pi, rematch_omp)
        src = mine.detect_source(path=path, head=head, hint=None)
        assert src is not None and src.harness == wrote, path
        assert theirs.detect_source(path=path, head=head, hint=None) is None, path
    assert {"omp", "pi"} <= {"omp" if p.read_bytes().startswith(b'{"type":"title"') else "pi" for p in FILES}
    others = [p for p in (CORPUS.parent / "claude_code", CORPUS.parent / "codex") if p.is_dir()]
    for root in others:
        for path in sorted(root.rglob("*.jsonl"))[:50]:
            with open(path, "rb") as f:
                head = f.read(4096)
            assert rematch_omp.detect_source(path=path, head=head, hint=None) is None, path
