"""Secrets planted in id fields (issue 41): a hostile transcript whose call ids are credentials or text gets none
of them into the data folder (events, trace, search index), the report or the conversation JSON; a call and
its result still pair (each id becomes the same ``redacted-…`` value)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rematch_trace.host.ids import clean_id

REMATCH = [sys.executable, "-c", "import sys; from rematch_trace.cli import main; sys.argv[0] = 'rematch'; main()"]
SID = "2a3b4c5d-6e7f-4a8b-9c0d-1e2f3a4b5c6d"
GITHUB = "ghp_" + "Zq8Lw2pXv9RtaB3dE5fG7hI9jK1lM3nO5pQ7"
AWS = "AKIA" + "IOSFODNN7EXAMPLQ"
TEXT_ID = "call id with a password=hunter2-hunter2 in it"
PLANTED = (GITHUB, AWS, "hunter2-hunter2")


def _rematch(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMATCH_")}
    env["REMATCH_HOME"] = str(data)
    return subprocess.run([*REMATCH, *args], capture_output=True, text=True, env=env, timeout=300)


def _transcript(path: Path) -> Path:
    lines = []
    n = 0

    def add(typ: str, message: dict[str, object]) -> None:
        nonlocal n
        n += 1
        lines.append({"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/w",
                      "sessionId": SID, "version": "2.1.39", "type": typ, "uuid": f"u{n}",
                      "timestamp": f"2026-02-10T21:00:{n:02d}.000Z", "message": message})

    add("user", {"role": "user", "content": "list the files"})
    for i, cid in enumerate((GITHUB, AWS, TEXT_ID)):
        add("assistant", {"id": f"msg{i}", "role": "assistant", "model": "claude-opus-4-6",
                          "content": [{"type": "tool_use", "id": cid, "name": "Bash", "input": {"command": "ls"}}],
                          "usage": {"input_tokens": 1, "output_tokens": 1}})
        add("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid, "content": "a b c"}]})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_clean_id_keeps_ids_and_replaces_the_rest() -> None:
    import rematch_trace.security.redact  # noqa: F401  (registers the credential check)

    for ok in ("toolu_01ABCDEFGHIJKLMNOPQRSTUV", SID, "call_abc123", "a1b2.agent-7", "permission-0123abcd"):
        assert clean_id(ok) == ok
    for bad in (GITHUB, AWS, TEXT_ID, "", "x" * 300, "\x1b[2J"):
        out = clean_id(bad)
        assert out.startswith("redacted-") and len(out) == 29 and out == clean_id(bad)
    assert clean_id(GITHUB) != clean_id(AWS)


@pytest.mark.parametrize("where", ["data folder", "report", "conversation"])
def test_planted_ids_reach_no_output(tmp_path: Path, where: str) -> None:
    data = tmp_path / "data"
    res = _rematch(data, "import", str(_transcript(tmp_path / f"{SID}.jsonl")))
    assert res.returncode == 0, res.stderr
    if where == "data folder":
        assert _rematch(data, "search", "files").returncode in (0, 1)
        # Every file but the ledger: its resumable state of the harness plugin keeps a call that waits for its
        # result as the plugin read it (the plugin's own state; not done, docs/threat-model.md).
        outputs = [p for p in data.rglob("*") if p.is_file() and not p.name.startswith("ledger.sqlite")]
        assert any(p.parent.name == "events" for p in outputs) and any("search" in p.name for p in outputs), outputs
        trace = next(p for p in outputs if p.parent.name == "traces").read_text()
        results = [json.loads(x) for x in trace.splitlines() if '"tool_result"' in x]
        assert len(results) == 3 and all(r["call_id"].startswith("redacted-") for r in results)
    elif where == "report":
        site = tmp_path / "site"
        res = _rematch(data, "report", "--out", str(site))
        assert res.returncode == 0, res.stderr
        outputs = [p for p in site.rglob("*") if p.is_file()]
    else:
        res = _rematch(data, "show", SID[:8], "--conversation", "--format", "json", "--full")
        assert res.returncode == 0, res.stderr
        (tmp_path / "conversation.json").write_text(res.stdout)
        outputs = [tmp_path / "conversation.json"]
        assert "redacted-" in res.stdout
    assert outputs
    for p in outputs:
        raw = p.read_bytes()
        for secret in PLANTED:
            assert secret.encode() not in raw, f"{secret} in {p}"
