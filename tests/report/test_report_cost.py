"""Cost: each turn's tokens by kind at the price table's prices, exact, per day, model and harness, in ``stats``
(table and JSON), ``sessions`` and the report; unknown models named and never counted as zero; the table
overridden or extended by the data folder's ``prices.yml`` or ``--prices FILE``.

Every figure below is worked out by hand from the fixture's token counts and the published prices (USD per
million tokens): claude-sonnet-4-5 $3 input, $3.75 cache write, $0.30 cache read, $15 output, and above a
200K-token prompt $6 / $7.50 / $0.60 / $22.50; gpt-5-codex $1.25 input, $0.125 cached input, $10 output;
claude-haiku-4-5 $1 input, $5 output.
"""

from __future__ import annotations

import json
import re
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hostile_gen import lines_for, path_for, run_import, sid_for, write
from page_check import embedded, page_text, parse
from report_gen import rematch, run

from rematch_trace.report.model_names import one_model
from rematch_trace.report.prices import PriceError, load


def _claude(sid: str, model: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A Claude Code session: one prompt, then one assistant message per usage given (each streamed as two
    lines, the first with a placeholder count, as Claude Code writes them)."""
    lines = lines_for("claude_code", sid, turns=1)[:1]
    base = {k: lines[0][k] for k in ("isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch")}
    parent = lines[0]["uuid"]
    for i, usage in enumerate(messages):
        for part, u in (("a", {"input_tokens": usage.get("input_tokens", 0), "output_tokens": 1}), ("b", usage)):
            uuid = f"{sid[:8]}-{i}{part}"
            lines.append(dict(base, parentUuid=parent, uuid=uuid, type="assistant", requestId=f"req_{i}",
                              timestamp=f"2026-02-10T21:10:{i % 60:02d}.{ord(part)}Z",
                              message={"id": f"msg_{i}", "type": "message", "role": "assistant", "model": model,
                                       "content": [{"type": "text", "text": f"answer {i}"}],
                                       "stop_reason": "end_turn" if part == "b" else None, "usage": u}))
            parent = uuid
    return lines


def _codex(sid: str) -> list[dict[str, Any]]:
    """A Codex session of two turns whose token counts advance by (input, cached input, output):
    (1000, 600, 200) then (2000, 1600, 300); Codex counts the cached part inside the input."""
    lines = lines_for("codex", sid, turns=2)
    counts = iter([({"input_tokens": 1000, "cached_input_tokens": 600, "output_tokens": 200, "total_tokens": 1200},
                    {"input_tokens": 1000, "cached_input_tokens": 600, "output_tokens": 200, "total_tokens": 1200}),
                   ({"input_tokens": 3000, "cached_input_tokens": 2200, "output_tokens": 500, "total_tokens": 3500},
                    {"input_tokens": 2000, "cached_input_tokens": 1600, "output_tokens": 300, "total_tokens": 2300})])
    for line in lines:
        payload = line["payload"]
        if payload.get("type") == "token_count":
            total, last = next(counts)
            payload["info"]["total_token_usage"] = total
            payload["info"]["last_token_usage"] = last
    return lines


#: Session id -> (model, what its cost must be, as stats prints it).
SONNET = "anthropic/claude-sonnet-4-5-20250929"
LONG = "anthropic/claude-sonnet-4-20250514"
CODEX = "openai/gpt-5-codex"
HAIKU = "anthropic/claude-haiku-4-5-20251001"
UNKNOWN = "anthropic/claude-nonesuch-9"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cost")
    src, out = root / "src", root / "data"
    write(path_for(src, "claude_code", sid_for("claude_code", 1)), _claude(sid_for("claude_code", 1), SONNET[10:], [
        # 1000 x 3 + 500 x 15 + 2000 x 3.75 + 30000 x 0.30 = 27,000 millionths
        {"input_tokens": 1000, "output_tokens": 500, "cache_creation_input_tokens": 2000,
         "cache_read_input_tokens": 30000},
        # the cache write told by its breakdown: 100 5-minute writes at $3.75, 50 1-hour writes at $6 (2x input):
        # 10 x 3 + 20 x 15 + 100 x 3.75 + 50 x 6 + 40000 x 0.30 = 13,005 millionths
        {"input_tokens": 10, "output_tokens": 20, "cache_creation_input_tokens": 0,
         "cache_creation": {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 50},
         "cache_read_input_tokens": 40000},
    ]))
    # A 250,010-token prompt is above 200K: the whole turn at the long-context rates,
    # 10 x 6 + 100 x 22.50 + 250000 x 0.60 = 152,310 millionths.
    write(path_for(src, "claude_code", sid_for("claude_code", 2)), _claude(sid_for("claude_code", 2), LONG[10:], [
        {"input_tokens": 10, "output_tokens": 100, "cache_read_input_tokens": 250000}]))
    # Thirty turns of one input and one output token at $1 and $5 a million: 0.00018 exactly (summed as
    # binary floats it is 0.00018000000000000007).
    write(path_for(src, "claude_code", sid_for("claude_code", 3)), _claude(sid_for("claude_code", 3), HAIKU[10:], [
        {"input_tokens": 1, "output_tokens": 1}] * 30))
    write(path_for(src, "claude_code", sid_for("claude_code", 4)), _claude(sid_for("claude_code", 4), UNKNOWN[10:], [
        {"input_tokens": 100, "output_tokens": 100}]))
    write(path_for(src, "codex", sid_for("codex", 1)), _codex(sid_for("codex", 1)))
    assert run_import(out, src).returncode == 0
    return out


def _stats(data: Path, *extra: str) -> dict[str, Any]:
    return json.loads(run("stats", "--out", str(data), "--json", *extra).stdout)


def _model(stats: dict[str, Any], name: str) -> dict[str, Any]:
    # A model's row goes by its name without a snapshot date (report/model_names.py).
    return next(m for m in stats["models"] if m["name"] == one_model(name))


def test_cost_is_tokens_by_kind_times_price_exactly(data: Path) -> None:
    stats = _stats(data)
    # Uncached input, cache writes (both kinds), cache reads and output each at their own price.
    assert _model(stats, SONNET)["cost"] == "0.040005"
    # A long prompt bills its whole turn at the long-context rates.
    assert _model(stats, LONG)["cost"] == "0.15231"
    # Codex: its input counts the cached part; only the rest is billed as input:
    # (3000 - 2200) x 1.25 + 2200 x 0.125 + 500 x 10 = 6,275 millionths.
    assert _model(stats, CODEX)["cost"] == "0.006275"
    assert _model(stats, HAIKU)["cost"] == "0.00018"
    priced = Decimal("0.040005") + Decimal("0.15231") + Decimal("0.006275") + Decimal("0.00018")
    assert Decimal(stats["total"]["cost"]) == priced
    # The same total per day and per harness, to the last digit.
    assert sum(Decimal(d["cost"]) for d in stats["days"]) == priced
    assert sum(Decimal(h["cost"]) for h in stats["harnesses"] if h["cost"]) == priced
    assert next(h for h in stats["harnesses"] if h["name"] == "codex")["cost"] == "0.006275"
    # Each session says its own, in sessions --json too.
    rows = {r["session_id"]: r for r in json.loads(run("sessions", "--out", str(data), "--json").stdout)}
    assert rows[sid_for("claude_code", 1)]["cost"] == "0.040005"
    assert rows[sid_for("codex", 1)]["cost"] == "0.006275"


def test_an_unknown_model_is_named_and_never_zero(data: Path) -> None:
    stats = _stats(data)
    unknown = _model(stats, UNKNOWN)
    assert unknown["cost"] is None and unknown["priced_share"] == 0 and unknown["tokens"] == 200
    assert stats["unpriced_models"] == [{"model": UNKNOWN, "tokens": 200}]
    assert 0 < stats["total"]["priced_share"] < 1
    text = run("stats", "--out", str(data)).stdout
    row = next(line for line in text.splitlines() if line.startswith(UNKNOWN))
    assert row.endswith("n/a") and "$0.00" not in row
    assert f"no price for: {UNKNOWN} (200 tokens)" in text
    # The partial total says so: its share of the tokens in brackets.
    assert re.search(r"^total .*\$0\.20 \(99%\)$", text, re.M), text
    # The harness it belongs to is partial too, never shown as whole.
    assert re.search(r"^claude_code .*\(\d+%\)$", text, re.M)


def test_report_shows_the_cost_and_names_what_has_no_price(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    run("report", "--data", str(data), "--out", str(out))
    index = (out / "index.html").read_text()
    note = re.search(r'<p class="note warn" id="unpriced">(.*?)</p>', index, re.S)
    assert note is not None and UNKNOWN in note.group(1) and "not zero" in note.group(1)
    stats = _stats(data)
    # The charts' data: per session, day and model the cost in billionths of a dollar, summed exactly.
    usage = [u for s in embedded(parse(out / "index.html"))["sessions"] for u in s["u"]]
    assert sum(u[3] for u in usage) == Decimal(stats["total"]["cost"]) * 10**9
    assert sum(u[4] for u in usage) == stats["total"]["priced_tokens"]
    assert [u[3] for u in usage if u[1] == UNKNOWN] == [0] and [u[4] for u in usage if u[1] == UNKNOWN] == [0]
    # A turn's cost in the timeline; "no price" where the model has none.
    key = next(s["k"] for s in embedded(parse(out / "index.html"))["sessions"] if s["m"] == one_model(SONNET))
    page = page_text(out / "sessions" / f"{key}.html")
    assert "$0.0270" in page and "$0.0130" in page
    unknown_page = next(p for p in (out / "sessions").glob("*.html") if UNKNOWN in page_text(p))
    assert "no price" in page_text(unknown_page)


def test_prices_file_in_the_data_folder_and_flag(data: Path, tmp_path: Path) -> None:
    copy = tmp_path / "data"
    shutil.copytree(data, copy)
    # The data folder's prices.yml replaces an entry (a made-up price for the test: sonnet input $30)...
    (copy / "prices.yml").write_text(
        'as_of: "2026-12-01"\nmodels:\n  claude-sonnet-4-5:\n    input: 30\n    cache_write: 3.75\n'
        "    cache_read: 0.30\n    output: 15\n    source: my invoice\n")
    stats = _stats(copy)
    # Its entry has no cache_write_1h: the 1-hour writes billed as cache_write (50 x 3.75, not 50 x 6),
    # 0.0398925 + (1000 + 10) x 27 millionths more
    assert _model(stats, SONNET)["cost"] == str(Decimal("0.0398925") + Decimal(1010 * 27) / 10**6)
    assert str(copy / "prices.yml") in stats["prices"]["files"] and "2026-12-01" in stats["prices"]["as_of"]
    # ... and --prices extends the table: the unknown model gets a price, and nothing is left out.
    extra = tmp_path / "more.yml"
    extra.write_text("models:\n  claude-nonesuch-9: {input: 1, output: 2.5}\n")
    stats = _stats(copy, "--prices", str(extra))
    assert _model(stats, UNKNOWN)["cost"] == "0.00035" and stats["unpriced_models"] == []
    assert stats["total"]["priced_share"] == 1
    # The report follows the prices: every page is rewritten (they show costs), the index says it.
    res = run("report", "--data", str(copy), "--prices", str(extra))
    assert "5 page(s) written" in res.stdout
    assert 'id="unpriced"' not in (copy / "report" / "index.html").read_text()
    res = run("report", "--data", str(copy), "--prices", str(extra))
    assert "0 page(s) written, 5 unchanged" in res.stdout and "0 trace(s) read" in res.stdout
    res = run("report", "--data", str(copy))
    assert "5 page(s) written" in res.stdout and 'id="unpriced"' in (copy / "report" / "index.html").read_text()


@pytest.mark.parametrize(("text", "says"), [
    ("models:\n  m: {input: 1, ouput: 2}\n", "unknown key 'ouput'"),
    ("models:\n  m: {input: -1, output: 2}\n", "models.m.input is not a price"),
    ("models:\n  m: {input: 1}\n", "models.m has no output price"),
    ("models:\n  m: {input: 1, output: 2, long_context: {above: 0, input: 1, output: 1}}\n", "above"),
    ("models: [1, 2\n", "not YAML"),
    ("- just a list\n", "not a mapping"),
    ("models:\n  m: {input: .nan, output: 2}\n", "not a price"),
])
def test_a_bad_prices_file_is_one_clear_line(data: Path, tmp_path: Path, text: str, says: str) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text(text)
    for cmd in (("stats", "--out"), ("sessions", "--out"), ("report", "--data")):
        res = rematch(*cmd, str(data), "--prices", str(bad))
        assert res.returncode == 2, res.stdout  # a file with mistakes: the README's exit table
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and "prices not loaded" in lines[0] and str(bad) in lines[0] and says in lines[0], lines
        assert "Traceback" not in res.stderr
    missing = rematch("stats", "--out", str(data), "--prices", str(tmp_path / "none.yml"))
    assert missing.returncode == 2 and "cannot be read" in missing.stderr


def test_lookup_rules() -> None:
    table = load()
    # Provider prefixes and dated snapshots name the model they price; case does not matter.
    for name in ("anthropic/claude-sonnet-4-5-20250929", "claude-sonnet-4-5", "Anthropic/Claude-Sonnet-4-5",
                 "openrouter/anthropic/claude-sonnet-4-5", "claude-sonnet-4-5-2025-09-29"):
        assert table.lookup(name) is table.lookup("claude-sonnet-4-5") is not None, name
    # Aliases the table states (Codex's models that cost what gpt-5 does).
    assert table.lookup("openai/gpt-5.1-codex-max") is table.lookup("gpt-5")
    # No guessing: a variant the table does not list is unknown, not priced as its base model.
    for name in ("openai/gpt-5-codex-ultra", "claude-sonnet-4-5-thinking", "unknown", ""):
        assert table.lookup(name) is None, name
    # Every shipped entry says where its prices come from, and the table when it was compiled.
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", table.as_of)
    assert all(p.source and p.source.startswith("https://") for p in table.models.values())


def test_the_shipped_table_covers_the_models_of_the_corpus(corpus_dir: Path) -> None:
    """Every model a Claude Code or Codex transcript of the shared corpus names has a price (omp's state one)."""
    table = load()
    names: set[str] = set()
    for p in [*corpus_dir.glob("claude_code/**/*.jsonl"), *corpus_dir.glob("codex/**/*.jsonl")]:
        names.update(re.findall(r'"model": ?"([^"<]+)"', p.read_text(errors="replace")))
    assert len(names) >= 8
    assert {n for n in names if table.lookup(n) is None} == set()


def test_load_rejects_what_the_cli_reports(tmp_path: Path) -> None:
    bad = tmp_path / "p.yml"
    bad.write_text("models:\n  m: {input: 1, output: 2, source: 3}\n")
    with pytest.raises(PriceError, match="source is not a string"):
        load(extra=bad)
    good = tmp_path / "q.yml"
    good.write_text("models:\n  m: {input: 0.1, output: 0.2}\n")
    # 0.1 and 0.2 are read as decimals: three turns of one token each cost exactly 0.0000009.
    price = load(extra=good).lookup("m")
    assert price is not None
    assert sum((price.cost(1, 1, 0, 0) for _ in range(3)), Decimal(0)) == Decimal("0.0000009")
