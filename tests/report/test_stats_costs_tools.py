"""``rematch stats``: omp's stated costs added up as the decimals omp meant, and per-tool call counts and
error rates; through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from hostile_gen import lines_for, path_for, sid_for, write
from report_gen import run


def test_omp_stated_costs_are_exact_decimals_and_tools_are_counted(tmp_path: Path) -> None:
    sid = sid_for("omp", 7)
    lines = lines_for("omp", sid, turns=4)
    # What omp writes: each total a JavaScript sum of its parts, float noise and all.
    totals = iter([0.1 + 0.2, 0.000021000000000000002, 0.0396837, 117.03706559999999])
    for line in lines:
        usage = (line.get("message") or {}).get("usage") or {}
        if "cost" in usage:
            usage["cost"]["total"] = next(totals)
    write(path_for(tmp_path / "src", "omp", sid), lines)
    data = tmp_path / "data"
    run("import", str(tmp_path / "src"), "--data", str(data), "-q")
    got = json.loads(run("stats", "--data", str(data), "--json").stdout)
    # Stated: 0.3 + 0.000021 + 0.0396837 + 117.0370656 (each read to 15 significant digits); the four
    # answers state none: 1 input x $5 + 1 output x $25 per million (claude-opus-4-5), 4 x 0.00003.
    assert got["harnesses"][0]["cost"] == "117.3768903"
    assert got["total"]["cost"] == "117.3768903"
    assert got["tools"] == [{"name": "bash", "calls": 4, "errors": 2, "sessions": 1, "error_rate": 0.5}]
    text = run("stats", "--data", str(data)).stdout
    assert "$117.38" in text
    tool_lines = [ln.split() for ln in text.splitlines() if ln.startswith(("tool ", "bash "))]
    assert tool_lines == [["tool", "calls", "sessions", "errors", "error", "rate"], ["bash", "4", "1", "2", "50.0%"]]


def test_shipped_price_date_is_known_without_parsing_and_matches_the_parse() -> None:
    """``stats`` prints the shipped table's date from :data:`SHIPPED_AS_OF` (no YAML parsed): the pair must
    be the shipped file's digest and the date its parse gives; another text is still parsed for its date."""
    from rematch_trace.report.prices import SHIPPED_AS_OF, PriceTable, _parse, load, shipped_text, source_key

    table = load()
    assert table.source == SHIPPED_AS_OF[0], "prices.yml changed: update SHIPPED_AS_OF (its source_key and as_of)"
    assert table.as_of == SHIPPED_AS_OF[1] == _parse(((shipped_text(), "shipped"),)).as_of
    assert table._parsed is None  # the date came without the parse
    other = shipped_text().replace(f'as_of: "{SHIPPED_AS_OF[1]}"', 'as_of: "2001-02-03"')
    edited = PriceTable(("(shipped)",), source_key([other]), ((other, "edited"),))
    assert edited.as_of == "2001-02-03"


def test_shipped_dated_names_are_known_without_parsing_and_match_the_parse() -> None:
    """``sessions`` folds a dated model id by asking whether the table names it apart: for the shipped
    table that comes from :data:`SHIPPED_DATED` (no YAML parsed), which must be what the parse gives."""
    from rematch_trace.report.model_names import DATED, one_model
    from rematch_trace.report.prices import SHIPPED_DATED, PriceTable, _parse, load, shipped_text, source_key

    parsed = _parse(((shipped_text(), "shipped"),))
    assert {k for k in parsed.models if DATED.search(k)} == SHIPPED_DATED, "prices.yml changed: update SHIPPED_DATED"
    table = load()
    assert one_model("anthropic/claude-sonnet-4-5-20250929", table) == "anthropic/claude-sonnet-4-5"
    assert table._parsed is None  # folded without the parse
    # Another text that names a dated id at its own price is parsed, and keeps the two apart.
    other = shipped_text() + '\n  claude-sonnet-4-5-20250929: {input: 1, output: 2}\n'
    edited = PriceTable(("(shipped)",), source_key([other]), ((other, "edited"),))
    assert edited.names_dated("claude-sonnet-4-5-20250929")
    assert one_model("anthropic/claude-sonnet-4-5-20250929", edited) == "anthropic/claude-sonnet-4-5-20250929"
