"""The index page's faults of issue 32, in Chromium: tables that follow the filters, every day on the charts,
no sideways scroll, no empty box beside the cost, a folder for a session without a repository, one row per
model; and the search box, opened from ``file://``.

The report is built by the real ``rematch import`` and ``rematch report`` from four small sessions: two of
Claude Code a month apart (one naming its model with a snapshot date, one without; one in a git repository,
one in a plain folder), one of Codex and one of omp.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile_gen import cli_env, import_cmd, lines_for, path_for, run_import, sid_for, write
from page_check import embedded, parse, readable_bytes
from report_gen import TOKEN, run

#: A phrase only one prompt holds: the search box must find it.
PHRASE = "quokka harmonica sunrise"
PLAIN_SID = sid_for("claude_code", 7)


def _shift(value: Any, old: str, new: str) -> Any:
    """``value`` with every ``timestamp`` moved from day ``old`` to day ``new``."""
    if isinstance(value, dict):
        return {k: (v.replace(old, new) if k == "timestamp" and isinstance(v, str) else _shift(v, old, new))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_shift(v, old, new) for v in value]
    return value


def _undated(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _undated(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_undated(v) for v in value]
    return "claude-sonnet-4-5" if value == "claude-sonnet-4-5-20250929" else value


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The four sessions imported (redacted, as by default) and the report built."""
    root = tmp_path_factory.mktemp("faults")
    repo = root / "work" / "alpha"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (repo / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:acme/alpha.git\n')
    plain = root / "work" / "plain-folder"
    plain.mkdir(parents=True)
    src = root / "src"
    write(path_for(src, "claude_code", sid_for("claude_code", 1)),
          lines_for("claude_code", sid_for("claude_code", 1), cwd=str(repo)))
    later = _undated(_shift(lines_for("claude_code", PLAIN_SID, cwd=str(plain)), "2026-02-10", "2026-03-15"))
    later[0]["message"]["content"] = f"please {PHRASE} then deploy with token {TOKEN}"
    write(path_for(src, "claude_code", PLAIN_SID), later)
    write(path_for(src, "codex", sid_for("codex", 1)), lines_for("codex", sid_for("codex", 1), cwd=str(repo)))
    write(path_for(src, "omp", sid_for("omp", 1)), lines_for("omp", sid_for("omp", 1), cwd=str(repo)))
    imported = run_import(root / "data", src)
    assert imported.returncode == 0, imported.stderr
    run("report", "--data", str(root / "data"))
    report = root / "data" / "report"
    return {"root": root, "report": report, "index": report / "index.html", "plain": str(plain),
            "sessions": embedded(parse(report / "index.html"))["sessions"]}


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    p = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    p.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    p.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    try:
        yield p
        assert errors == []
    finally:
        p.close()


def _open(page: Any, index: Path) -> Any:
    page.goto(index.resolve().as_uri())
    page.wait_for_load_state("load")
    return page


def _table(page: Any, sel: str) -> list[list[str]]:
    return page.eval_on_selector_all(f"{sel} tbody tr", "rs => rs.map(r => Array.from(r.cells).map(c => c.innerText))")


def test_model_and_harness_tables_follow_every_filter(site: dict[str, Any], page: Any, artifacts: Path) -> None:
    _open(page, site["index"])
    page.select_option("#f-h", "codex")
    models = _table(page, "#by-model")
    harnesses = _table(page, "#by-harness")
    assert [r[0] for r in harnesses] == ["codex"]
    assert len(models) == 1 and "gpt-5" in models[0][0] and "claude" not in models[0][0]
    assert models[0][1] == "1"  # one session
    page.screenshot(path=str(artifacts / "faults-codex.png"), full_page=True)
    # The flag filter too: no session is flagged, so no model and no harness is listed, and the tables say so.
    page.select_option("#f-h", "")
    page.select_option("#f-f", "-")
    for sel in ("#by-model", "#by-harness"):
        rows = _table(page, sel)
        assert len(rows) == 1 and "no session matches" in rows[0][0].lower(), (sel, rows)
        assert "$" not in page.inner_text(sel)
    # The text search over rows counts as well: one Claude Code session.
    page.select_option("#f-f", "")
    page.fill("#f-q", "plain-folder")
    assert [r[0] for r in _table(page, "#by-harness")] == ["claude code"]
    assert [r[1] for r in _table(page, "#by-harness")] == ["1"]


def test_daily_charts_show_every_day_of_the_range(site: dict[str, Any], page: Any) -> None:
    _open(page, site["index"])
    page.select_option("#f-h", "claude_code")
    for cid in ("c-activity", "c-tokens", "c-cost"):
        labels = page.evaluate(f"() => Chart.getChart('{cid}').data.labels")
        assert labels[0] == "2026-02-10" and labels[-1] == "2026-03-15", cid
        assert len(labels) == 34, cid  # 10 February to 15 March, every day
        assert "2026-03-01" in labels
        values = page.evaluate(f"() => Chart.getChart('{cid}').data.datasets.map(d => d.data)")
        gap = labels.index("2026-03-01")
        assert all(v[gap] == 0 for v in values), cid


@pytest.mark.parametrize("width", [375, 768, 1024, 1440])
def test_no_sideways_scroll(site: dict[str, Any], browser: Any, width: int, artifacts: Path) -> None:
    p = browser.new_page(viewport={"width": width, "height": 900})
    try:
        _open(p, site["index"])
        wide = p.evaluate("() => [document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth]")
        assert wide[0] <= wide[1], wide
        # Neither figures table stands out of the box it is in; from 768 px on, neither needs a scrollbar.
        for sel in ("#by-model", "#by-harness"):
            out = p.eval_on_selector(sel, "t => t.getBoundingClientRect().right - t.parentElement.getBoundingClientRect().right")
            assert out <= 0.5, (sel, out)
            if width >= 768:  # and shows every column without a scrollbar of its own
                over = p.eval_on_selector(sel, "t => Math.max(t.scrollWidth - t.clientWidth, "
                                               "t.scrollWidth - t.parentElement.clientWidth)")
                assert over <= 0, (sel, over)
        p.screenshot(path=str(artifacts / f"index-{width}.png"), full_page=True)
    finally:
        p.close()


def test_no_empty_box_beside_cost(site: dict[str, Any], page: Any) -> None:
    _open(page, site["index"])
    assert page.inner_text("#t-priced") == ""  # every token has a price here
    assert not page.locator("#t-priced").is_visible()


def test_repository_filter_uses_the_folder_without_a_remote(site: dict[str, Any], page: Any) -> None:
    _open(page, site["index"])
    values = page.eval_on_selector("#f-r", "s => Array.from(s.options).map(o => o.value)")
    assert site["plain"] in values
    assert "github.com/acme/alpha" in values
    page.select_option("#f-r", site["plain"])
    shown = page.eval_on_selector_all("#sessions tbody tr[data-k]:not(.hidden-by-filter)", "els => els.map(e => e.dataset.k)")
    assert len(shown) == 1 and PLAIN_SID in shown[0]


def test_one_row_per_model(site: dict[str, Any], page: Any) -> None:
    _open(page, site["index"])
    names = [r[0] for r in _table(page, "#by-model")]
    sonnet = [n for n in names if "sonnet" in n]
    assert sonnet == ["anthropic/claude-sonnet-4-5"], names
    row = next(r for r in _table(page, "#by-model") if "sonnet" in r[0])
    assert row[1] == "2"  # both Claude Code sessions
    menu = page.eval_on_selector("#f-m", "s => Array.from(s.options).map(o => o.value)")
    assert [m for m in menu if "sonnet" in m] == ["anthropic/claude-sonnet-4-5"]
    page.select_option("#f-m", "anthropic/claude-sonnet-4-5")
    assert page.locator("#sessions tbody tr[data-k]:not(.hidden-by-filter)").count() == 2
def test_search_box_finds_a_planted_phrase_from_file_url(site: dict[str, Any], page: Any, artifacts: Path) -> None:
    _open(page, site["index"])
    assert page.url.startswith("file://")
    page.fill("#s-q", "harmonica QUOKKA")
    hits = page.locator("#s-hits li")
    hits.first.wait_for()
    assert hits.count() == 1
    text = hits.first.inner_text()
    assert "quokka" in text.lower() and "prompt #" in text.lower()
    assert "ghp_" not in text
    page.screenshot(path=str(artifacts / "search-hit.png"), full_page=True)
    href = hits.first.locator("a").first.get_attribute("href")
    assert href is not None and href.startswith("sessions/") and PLAIN_SID in href
    page.click("#s-hits li a")
    page.wait_for_load_state("load")
    assert page.url.endswith(href.split("/", 1)[1])
    # A phrase in quotes must occur as it is; other filters narrow the hits.
    _open(page, site["index"])
    page.fill("#s-q", '"sunrise harmonica"')
    page.wait_for_timeout(300)
    assert page.locator("#s-hits li").count() == 0
    assert "no match" in page.inner_text("#s-status").lower()
    page.select_option("#f-h", "codex")
    page.fill("#s-q", "quokka")
    page.wait_for_timeout(300)
    assert page.locator("#s-hits li").count() == 0


def _site_bytes(report: Path) -> Iterator[tuple[Path, bytes]]:
    """Every file of the site as a reader gets it (page_check.readable_bytes: compressed parts inflated)."""
    for p in sorted(report.rglob("*")):
        if p.is_file():
            yield p, readable_bytes(p)


def test_no_planted_secret_in_the_shipped_index(site: dict[str, Any]) -> None:
    shards = sorted((site["report"] / "search").glob("*.js"))
    assert shards
    assert any(PHRASE.encode() in b for _, b in _site_bytes(site["report"] / "search"))
    for p, b in _site_bytes(site["report"]):
        assert TOKEN.encode() not in b, p
        assert re.search(rb"ghp_[A-Za-z0-9]{20}", b) is None, p


def test_no_secret_in_the_index_of_an_unredacted_import(tmp_path: Path) -> None:
    """Imported with --no-redact, the session page shows what the trace kept; the search index still never
    holds the secret (it is built from the redacted text ``rematch search`` indexes)."""
    src = tmp_path / "src"
    lines = lines_for("claude_code", PLAIN_SID)
    lines[0]["message"]["content"] = f"{PHRASE} token {TOKEN}"
    write(path_for(src, "claude_code", PLAIN_SID), lines)
    raw = tmp_path / "raw"
    proc = subprocess.run([*import_cmd(raw, src), "--no-redact"], env=cli_env(), capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    run("report", "--data", str(raw))
    site = raw / "report"
    assert any(TOKEN.encode() in b for _, b in _site_bytes(site / "sessions"))  # the control: it is there
    shards = list(_site_bytes(site / "search"))
    assert shards and any(PHRASE.encode() in b for _, b in shards)
    assert not any(TOKEN.encode() in b for _, b in shards)


def test_search_hits_of_hostile_text_are_text(hostile: dict[str, Any], browser: Any) -> None:
    """The hostile corpus's payloads, found by the search box, show as text: no dialog, no error, no
    element made from them."""
    p = browser.new_page(viewport={"width": 1200, "height": 900})
    dialogs: list[str] = []
    errors: list[str] = []
    p.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    p.on("pageerror", lambda e: errors.append(str(e)))
    try:
        _open(p, hostile["report"] / "index.html")
        p.fill("#s-q", "alert")
        p.locator("#s-hits li").first.wait_for()
        assert p.locator("#s-hits li").count() > 1
        assert "<script>" in p.inner_text("#s-hits")
        assert p.eval_on_selector_all("#s-hits *", "els => els.filter(e => !['LI', 'DIV', 'A', 'SPAN', 'MARK']"
                                      ".includes(e.tagName)).length") == 0
        p.wait_for_timeout(200)
        assert dialogs == [] and errors == []
    finally:
        p.close()


def test_search_files_follow_a_refresh(tmp_path: Path) -> None:
    """A session imported later is in the search files of the next report; the earlier one stays (taken
    from the files already written), and a session left out by --since is not shipped."""
    src = tmp_path / "src"
    first = lines_for("claude_code", sid_for("claude_code", 1))
    first[0]["message"]["content"] = "the first wombat"
    write(path_for(src, "claude_code", sid_for("claude_code", 1)), first)
    data = tmp_path / "data"
    assert run_import(data, src).returncode == 0
    run("report", "--data", str(data))
    search = data / "report" / "search"
    assert b"first wombat" in b"".join(b for _, b in _site_bytes(search))
    later = _shift(lines_for("claude_code", sid_for("claude_code", 2)), "2026-02-10", "2026-03-15")
    later[0]["message"]["content"] = "the second numbat"
    write(path_for(src, "claude_code", sid_for("claude_code", 2)), later)
    assert run_import(data, src).returncode == 0
    run("report", "--data", str(data))
    shipped = b"".join(b for _, b in _site_bytes(search))
    assert b"first wombat" in shipped and b"second numbat" in shipped
    run("report", "--data", str(data), "--since", "2026-03-01")
    shipped = b"".join(b for _, b in _site_bytes(search))
    assert b"first wombat" not in shipped and b"second numbat" in shipped
