"""``rematch stats``, ``sessions``, ``show`` and ``flagged`` over real-format transcripts, as a user runs them."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import pytest
from hostile_gen import HARNESSES, lines_for, make, path_for, run_import, sid_for, write
from page_check import embedded, parse
from report_gen import rematch, run


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli")
    src, out = root / "src", root / "data"
    for h in HARNESSES:
        make(src, h, 1, turns=3)
    # A Claude Code session whose last call never got a result, and whose user turned it around.
    lines = lines_for("claude_code", sid_for("claude_code", 2), turns=2)
    lines[5]["message"]["content"] = "no, stop, that is wrong"
    del lines[-3]  # the tool_result of the second call
    write(path_for(src, "claude_code", sid_for("claude_code", 2)), lines)
    assert run_import(out, src).returncode == 0
    return out


def test_sessions_lists_everything_newest_first_and_filters(data: Path) -> None:
    rows = json.loads(run("sessions", "--out", str(data), "--json").stdout)
    assert len(rows) == 4 and {r["harness"] for r in rows} == set(HARNESSES)
    assert [r["started"] for r in rows] == sorted((r["started"] for r in rows), reverse=True)
    cc = [r for r in rows if r["harness"] == "claude_code"]
    assert {r["inputs"] for r in cc} == {2, 3}
    flagged = json.loads(run("sessions", "--out", str(data), "--json", "--flag", "redirect").stdout)
    assert [r["session_id"] for r in flagged] == [sid_for("claude_code", 2)]
    assert json.loads(run("sessions", "--out", str(data), "--json", "--harness", "codex").stdout)[0]["harness"] == "codex"
    assert json.loads(run("sessions", "--out", str(data), "--json", "--flag", "none", "--harness", "omp").stdout)
    text = run("sessions", "--out", str(data), "--flat").stdout.splitlines()
    assert text[0].split()[:3] == ["started", "(UTC)", "harness"] and text[-1] == "4 session(s)"
    # Aligned: every row's harness column starts where the header's does.
    col = text[0].index("harness")
    assert all(line[col:].split()[0] in HARNESSES for line in text[1:-1])
    # Grouped (the default): a project line above its sessions, the same columns aligned.
    text = run("sessions", "--out", str(data)).stdout.splitlines()
    assert text[0].split()[:3] == ["started", "(UTC)", "harness"] and text[-1] == "4 session(s)"
    col = text[0].index("harness")
    rows = [line for line in text[1:-1] if not line.startswith("== ")]
    assert len(rows) == 4 and all(line[col:].split()[0] in HARNESSES for line in rows)
    assert any(line.startswith("== ") for line in text)
    nothing = rematch("sessions", "--out", str(data), "--model", "no-such-model")
    assert nothing.returncode == 1 and nothing.stdout.strip() == "no sessions match"  # nothing found: 1


def test_stats_agree_with_sessions_and_the_report(data: Path) -> None:
    stats = json.loads(run("stats", "--out", str(data), "--json").stdout)
    rows = json.loads(run("sessions", "--out", str(data), "--json").stdout)
    total = stats["total"]
    assert total["sessions"] == 4
    assert total["inputs"] == sum(r["inputs"] for r in rows)
    assert total["tokens"] == sum(r["tokens"] for r in rows) > 0
    assert total["redirects"] == 1
    assert sum(d["tokens"] for d in stats["days"]) == total["tokens"]
    assert sum(m["tokens"] for m in stats["models"]) == total["tokens"]
    assert sum(h["sessions"] for h in stats["harnesses"]) == 4
    # omp states a cost on the turns that had one (3 x $0.3); its other turns (claude-opus-4-5, 1 input and
    # 1 output token each) are priced from the table, $5 and $25 a million: exact decimals, as text.
    omp = next(h for h in stats["harnesses"] if h["name"] == "omp")
    assert omp["cost"] == "0.90009" and omp["priced_share"] == 1
    # Claude Code and Codex state no cost: their known models are priced from the table.
    assert all(h["priced_share"] == 1 and h["cost"] is not None for h in stats["harnesses"])
    assert stats["unpriced_models"] == [] and stats["prices"]["as_of"]
    text = run("stats", "--out", str(data)).stdout
    assert re.search(r"^total\s+4\s", text, re.M) and "claude_code" in text
    assert not re.search(r"\sn/a$", text, re.M)  # no row without a cost
    # The report's embedded figures add up to the same.
    run("report", "--data", str(data))
    figures = embedded(parse(data / "report" / "index.html"))["sessions"]
    assert sum(u[2] for s in figures for u in s["u"]) == total["tokens"]
    # The index's script adds costs as whole billionths of a dollar: the same total, exactly.
    assert sum(u[3] for s in figures for u in s["u"]) == Decimal(total["cost"]) * 10**9
    assert sum(d[1] for s in figures for d in s["daily"]) == total["inputs"]


def test_show_has_dates_flags_and_unanswered_calls(data: Path) -> None:
    out = run("show", sid_for("claude_code", 2), "--out", str(data)).stdout.splitlines()
    assert re.match(r"^\s+0\s+2026-02-10 21:\d\d:\d\d session_start", out[0]), out[0]
    assert "remote=" not in out[0] and "model unknown" not in out[0]
    redirect = [line for line in out if "<- redirect" in line]
    assert len(redirect) == 1 and " ! " in redirect[0] and "<negation>" in redirect[0]
    unanswered = [line for line in out if " no result " in line]
    assert len(unanswered) == 1 and "Bash" in unanswered[0] and "ls dir1" in unanswered[0]
    # Columns hold: the kind starts at the same place on every line.
    col = out[0].index("session_start")
    assert all(line[col - 1] == " " and line[col] != " " for line in out)


def test_flagged_has_date_folder_and_counts(data: Path) -> None:
    out = run("flagged", "--out", str(data)).stdout.splitlines()
    assert out[0].split()[:3] == ["started", "(UTC)", "harness"] and out[-1] == "1 flagged session(s)"
    assert "2026-02-10" in out[1] and "/work/project" in out[1] and "redirect" in out[1]
    rows = json.loads(run("flagged", "--out", str(data), "--json").stdout)
    assert rows[0]["cwd"] == "/work/project" and rows[0]["redirects"] == 1 and rows[0]["seqs"]["redirect"]
