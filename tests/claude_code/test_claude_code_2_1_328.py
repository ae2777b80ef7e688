"""Claude Code 2.1.328 transcripts, as the harness rig recorded them (tests/harness), through ``rematch import``.

``fixtures/cc-2.1.328-resumed.jsonl``: one session of four prompts (the last three resumed), trimmed
of its long attachments, with the line types 2.1.150+ and 2.1.328 add (``mode``, ``atis-latch``,
``api-request-shape``, ``api-request``, ``api-request-blob``, ``tools-used``, ``last-prompt``,
``cost-state``). ``fixtures/cc-2.1.328-result-first.jsonl``: its first prompt with one tool result
line written before the assistant line holding its call, as Claude Code sometimes writes it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SID = "7311890f-e961-4bf0-b08e-51b2b466e47c"
REMATCH = [sys.executable, "-c", "import sys; from rematch_trace.cli import main; sys.argv[0] = 'rematch'; main()"]


def _import(tmp_path: Path, name: str) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    out = tmp_path / "data"
    res = subprocess.run([*REMATCH, "import", str(FIXTURES / name), "--out", str(out), "-j", "1"],
                         capture_output=True, text=True, timeout=120, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    path = out / "traces" / f"{SID}.jsonl"
    trace = [orjson.loads(x) for x in path.read_bytes().splitlines()] if path.exists() else []
    return res, trace


def _lines(name: str) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in (FIXTURES / name).read_bytes().splitlines()]


def test_modern_line_types_import_with_no_skipped_line(tmp_path: Path) -> None:
    """Every 2.1.328 line type is known: exit 0 and no line reported as skipped."""
    assert {"mode", "atis-latch", "api-request-shape", "api-request", "api-request-blob", "tools-used",
            "last-prompt", "cost-state"} <= {x["type"] for x in _lines("cc-2.1.328-resumed.jsonl")}
    res, trace = _import(tmp_path, "cc-2.1.328-resumed.jsonl")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "skipped" not in res.stderr and "0 skipped, 0 failed" in res.stdout, res.stdout + res.stderr
    assert trace


def test_content_carrying_copies_are_not_messages_or_results(tmp_path: Path) -> None:
    """``api-request-blob`` lines repeat messages and tool results: each counts once, as its own line."""
    lines = _lines("cc-2.1.328-resumed.jsonl")
    blob_results = [b for x in lines if x["type"] == "api-request-blob"
                    for b in (x["message"]["content"] if isinstance(x["message"]["content"], list) else [])
                    if b.get("type") == "tool_result"]
    assert blob_results  # the fixture does carry copies
    _res, trace = _import(tmp_path, "cc-2.1.328-resumed.jsonl")
    results = [r for r in trace if r["ev"] == "tool_result"]
    assert [r["tool"] for r in results] == ["Bash", "Bash", "Write", "Read", "Edit", "Agent", "Bash", "Bash"]
    assert len({r["call_id"] for r in results}) == len(results)
    assert all(isinstance(r["args_hash"], str) and len(r["args_hash"]) == 64 for r in results)
    assert sum(r["ev"] == "turn_end" for r in trace) == sum(x["type"] == "assistant" for x in lines)
    assert [r["text"] for r in trace if r["ev"] == "input"] == [
        "Use the tools. [rig:tools]", "alpha", "/rematch mark correction the rig marks this",
        "Upload the report. [rig:deny]"]


def test_a_result_written_before_its_call_pairs_by_tool_use_id(tmp_path: Path) -> None:
    """The result line comes first; the trace still names the call's tool, input and args_hash."""
    lines = _lines("cc-2.1.328-result-first.jsonl")
    order = [x["type"] for x in lines if x["type"] in ("user", "assistant")
             and "toolu_0003rig" in orjson.dumps(x["message"]).decode()]
    assert order == ["user", "assistant"]
    res, trace = _import(tmp_path, "cc-2.1.328-result-first.jsonl")
    assert res.returncode == 0, res.stderr
    by_id = {r["call_id"]: r for r in trace if r["ev"] == "tool_result"}
    late = by_id["toolu_0003rig"]
    assert (late["tool"], late["input"]["command"], late["is_error"]) == ("Bash", "ls /nonexistent-rig-dir", True)
    assert isinstance(late["args_hash"], str) and len(late["args_hash"]) == 64
    # Still after its call's turn, as for any other result.
    evs = [(r["ev"], r.get("call_id")) for r in trace]
    assert evs.index(("tool_result", "toolu_0003rig")) > evs.index(("tool_result", "toolu_0001rig"))


def test_a_task_notification_after_the_stop_starts_a_run_of_its_own(tmp_path: Path) -> None:
    """2.1.328 runs the Agent tool in the background and, once the loop stopped, submits its
    ``<task-notification>``: the loop that answers it is a run with no input, as live (two Stops)."""
    _res, trace = _import(tmp_path, "cc-2.1.328-resumed.jsonl")
    assert [r["turns"] for r in trace if r["ev"] == "agent_end"] == [7, 1, 2, 1, 2]
    evs = [r["ev"] for r in trace]
    first, second = [i for i, e in enumerate(evs) if e == "agent_end"][:2]
    assert "input" not in evs[first:second] and evs[first + 1] == "turn_end"


def test_an_early_result_cut_at_every_line_continues_as_a_cold_import_and_rests_sealed(tmp_path: Path) -> None:
    """A result waiting for its call's line is in the saved state as a sealed reference, never its text.

    The fixture cut after every line, imported, then grown to its end and imported again: the
    outputs equal a cold import's, and no saved state holds the early result's output text.
    """
    import sqlite3

    name = "cc-2.1.328-result-first.jsonl"
    lines = (FIXTURES / name).read_bytes().splitlines(keepends=True)
    cold, _ = _import(tmp_path / "cold", name)
    assert cold.returncode == 0, cold.stderr
    cold_trace = (tmp_path / "cold" / "data" / "traces" / f"{SID}.jsonl").read_bytes()
    heads = [b["content"] for x in _lines(name) if x.get("type") == "user"
             for b in (x["message"]["content"] if isinstance(x["message"]["content"], list) else [])
             if isinstance(b, dict) and b.get("type") == "tool_result" and isinstance(b.get("content"), str)
             and len(b["content"]) > 12]
    assert heads
    for cut in range(1, len(lines)):
        work = tmp_path / f"cut{cut}"
        work.mkdir()
        src = work / name
        src.write_bytes(b"".join(lines[:cut]))
        out = work / "data"
        env = {"HOME": str(work), "PATH": "/usr/bin:/bin"}
        first = subprocess.run([*REMATCH, "import", str(src), "--out", str(out), "-j", "1"], capture_output=True,
                               text=True, timeout=120, env=env)
        assert first.returncode in (0, 1), first.stderr
        with sqlite3.connect(out / "ledger.sqlite") as db:
            saved = b"".join(bytes(row[0]) for row in db.execute("select saved from sources") if row[0])
        for head in heads:
            # As it would rest in a JSON state (escaped), past its first line (none is shorter than 12).
            assert orjson.dumps(head)[1:-1][:60] not in saved, (cut, head[:40])
        src.write_bytes(b"".join(lines))
        again = subprocess.run([*REMATCH, "import", str(src), "--out", str(out), "-j", "1"], capture_output=True,
                               text=True, timeout=120, env=env)
        assert again.returncode == 0, again.stderr
        assert (out / "traces" / f"{SID}.jsonl").read_bytes() == cold_trace, cut
