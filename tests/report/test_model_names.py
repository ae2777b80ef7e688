"""The rule that gives a model one name (``report/model_names.py``), checked against the price table, and
``rematch stats`` showing one row for a model named with and without its snapshot date."""

from __future__ import annotations

import json
from pathlib import Path

from hostile_gen import lines_for, path_for, run_import, sid_for, write
from report_gen import run

from rematch_trace.report.model_names import one_model
from rematch_trace.report.prices import load


def test_a_dated_id_folds_into_the_model_and_keeps_its_price() -> None:
    prices = load()
    assert one_model("anthropic/claude-sonnet-4-5-20250929") == "anthropic/claude-sonnet-4-5"
    assert one_model("claude-3-5-haiku-2024-10-22") == "claude-3-5-haiku"
    assert one_model("claude-3-5-sonnet-latest") == "claude-3-5-sonnet-latest"  # not one snapshot
    assert one_model("gpt-5-codex") == "gpt-5-codex"
    assert one_model("-20250929") == "-20250929"
    # Every model the shipped table prices has, dated, the very price of its undated name.
    for name in prices.models:
        dated = f"{name}-20250929"
        assert one_model(dated, prices) == name
        assert prices.lookup(dated) == prices.lookup(name) is not None


def test_a_price_table_that_tells_a_dated_id_apart_keeps_both(tmp_path: Path) -> None:
    (tmp_path / "prices.yml").write_text(
        "models:\n  claude-sonnet-4-5-20250929:\n    input: 1\n    output: 2\n")
    prices = load(tmp_path)
    assert one_model("anthropic/claude-sonnet-4-5-20250929", prices) == "anthropic/claude-sonnet-4-5-20250929"
    assert one_model("anthropic/claude-opus-4-5-20251101", prices) == "anthropic/claude-opus-4-5"


def _two_namings(tmp_path: Path) -> Path:
    """Two Claude Code sessions, one naming its model with the snapshot date and one without, imported."""
    src = tmp_path / "src"
    write(path_for(src, "claude_code", sid_for("claude_code", 1)), lines_for("claude_code", sid_for("claude_code", 1)))
    undated = json.loads(json.dumps(lines_for("claude_code", sid_for("claude_code", 2))).replace(
        "claude-sonnet-4-5-20250929", "claude-sonnet-4-5"))
    write(path_for(src, "claude_code", sid_for("claude_code", 2)), undated)
    assert run_import(tmp_path / "data", src).returncode == 0
    return tmp_path / "data"


def test_stats_shows_one_row_per_model(tmp_path: Path) -> None:
    got = json.loads(run("stats", "--data", str(_two_namings(tmp_path)), "--json").stdout)
    names = [m["name"] for m in got["models"]]
    assert names == ["anthropic/claude-sonnet-4-5"], names
    assert got["models"][0]["sessions"] == 2


def test_sessions_shows_one_name_per_model(tmp_path: Path) -> None:
    """``rematch sessions`` (grouped and --flat) names both sessions' model as the report and ``stats`` do;
    ``--json`` keeps the trace's id in ``model`` and adds the folded one; ``stats``' table has one row."""
    data = _two_namings(tmp_path)
    for flat in ([], ["--flat"]):
        out = run("sessions", "--data", str(data), *flat).stdout
        rows = [line for line in out.splitlines() if sid_for("claude_code", 1) in line or sid_for("claude_code", 2) in line]
        assert len(rows) == 2, out
        assert all("anthropic/claude-sonnet-4-5 " in r for r in rows), out
        assert "20250929" not in out
    got = {s["session_id"]: s for s in json.loads(run("sessions", "--data", str(data), "--json").stdout)}
    dated, plain = got[sid_for("claude_code", 1)], got[sid_for("claude_code", 2)]
    assert dated["model"] == "anthropic/claude-sonnet-4-5-20250929"
    assert plain["model"] == "anthropic/claude-sonnet-4-5"
    assert dated["model_folded"] == plain["model_folded"] == "anthropic/claude-sonnet-4-5"
    table = run("stats", "--data", str(data)).stdout
    assert "claude-sonnet-4-5" in table and "20250929" not in table


def test_sessions_keeps_a_dated_id_the_price_table_prices_apart(tmp_path: Path) -> None:
    data = _two_namings(tmp_path)
    prices = tmp_path / "apart.yml"
    prices.write_text("models:\n  claude-sonnet-4-5-20250929:\n    input: 1\n    output: 2\n")
    out = run("sessions", "--data", str(data), "--flat", "--prices", str(prices)).stdout
    assert "anthropic/claude-sonnet-4-5-20250929" in out and "anthropic/claude-sonnet-4-5 " in out
    got = json.loads(run("sessions", "--data", str(data), "--json", "--prices", str(prices)).stdout)
    assert {s["model_folded"] for s in got} == {"anthropic/claude-sonnet-4-5-20250929", "anthropic/claude-sonnet-4-5"}
