"""rematch audit: risky pre_tool_use events, most severe first, filtered by session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from rematch_trace.report.audit import audit, format_audit


def ev(kind: str, sid: str, call: str | None, feats: list[str], t: str = "2026-01-01T00:00:00.000Z") -> dict[str, Any]:
    return {"kind": kind, "source_session_id": sid, "agent_sub_id": None, "source_tool_call_id": call,
            "risk_features": feats, "occurred_at": t, "event_id": f"{sid}-{call}-{kind}", "tool_name": "Bash",
            "action_type": "shell_exec", "args_summary": f"cmd {call}", "metadata": {}}


def write(folder: Path, sid: str, events: list[dict[str, Any]]) -> None:
    (folder / "events").mkdir(parents=True, exist_ok=True)
    (folder / "events" / f"{sid}.jsonl").write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events) + b"not json\n")


def test_sorted_by_severity_with_outcomes(tmp_path: Path) -> None:
    write(tmp_path, "s1", [
        ev("pre_tool_use", "s1", "a", ["network_egress"]),
        ev("pre_tool_use", "s1", "b", ["remote_code_fetch_exec", "network_egress"]),
        ev("pre_tool_use", "s1", "c", []),
        ev("post_tool_failure", "s1", "b", ["remote_code_fetch_exec", "network_egress"]),
        ev("post_tool_use", "s1", "a", ["network_egress"]),
    ])
    write(tmp_path, "s2", [ev("pre_tool_use", "s2", "d", ["destructive_command"])])
    rows = audit(tmp_path)
    assert [r["args_summary"] for r in rows] == ["cmd b", "cmd d", "cmd a"]
    assert [r["outcome"] for r in rows] == ["failed", "unknown", "ok"]
    assert [r["args_summary"] for r in audit(tmp_path, "s2")] == ["cmd d"]
    assert audit(tmp_path, "nope") == []
    text = format_audit(rows)
    assert "remote_code_fetch_exec" in text and "3 risky action(s)" in text
    assert format_audit([]) == "no risky actions found"


def test_empty_folder(tmp_path: Path) -> None:
    assert audit(tmp_path) == []
