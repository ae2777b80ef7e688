"""The report's search box ranks its hits (issue 32), in Chromium from ``file://``, through the real
``rematch import`` and ``rematch report``.

Planted prompts, one session each, a day apart: a record holding the query's words many times (older)
and one holding each once in a longer text (newest); accented and capitalised words; a phrase split by
punctuation; a word inside a longer one; a Codex session for the filters; a secret that must reach no file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile_gen import lines_for, path_for, run_import, sid_for, write
from page_check import readable_bytes
from report_gen import TOKEN, rematch, run

MANY = sid_for("claude_code", 21)  # every query word, many times
ONCE = sid_for("claude_code", 22)  # every query word once, in a longer text, newest
ACCENT = sid_for("claude_code", 23)
PHRASE = sid_for("claude_code", 24)
CODEX = sid_for("codex", 25)
PROMPTS = {
    MANY: ("2026-02-11", "wombat burrow: the wombat digs a burrow, a wombat burrow beside the wombat burrow"),
    ONCE: ("2026-02-15", "notes on the garden, the weather, the tea, the train, the sea, the mountain, the river, "
                         "the lake, the forest, and one wombat seen near a burrow in the hills"),
    ACCENT: ("2026-02-12", "Le Café Crème était NAÏVE; concatenate the lists"),
    PHRASE: ("2026-02-13", f"play the harmonica,   sunrise at dawn; the cat sleeps; token {TOKEN}"),
    CODEX: ("2026-02-14", "a codex wombat burrow"),
}


def _on_day(value: Any, day: str) -> Any:
    """``value`` with every timestamp's day (2026-02-10 in the builders) set to ``day``."""
    if isinstance(value, dict):
        return {k: (v.replace("2026-02-10", day) if k == "timestamp" and isinstance(v, str) else _on_day(v, day))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_on_day(v, day) for v in value]
    return value


def _prompted(harness: str, sid: str, text: str) -> list[dict[str, Any]]:
    """A session of ``harness`` whose first prompt is ``text``."""
    lines = lines_for(harness, sid)
    if harness == "claude_code":
        lines[0]["message"]["content"] = text
        return lines
    for line in lines:
        p = line.get("payload", {})
        if p.get("type") == "message" and p.get("role") == "user":
            p["content"][0]["text"] = text
            break
    for line in lines:
        p = line.get("payload", {})
        if p.get("type") == "user_message":
            p["message"] = text
            break
    return lines


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sessions imported (redacted, as by default) and the report built; its folder."""
    root = tmp_path_factory.mktemp("rank")
    src = root / "src"
    for sid, (day, text) in PROMPTS.items():
        harness = "codex" if sid == CODEX else "claude_code"
        lines = _on_day(_prompted(harness, sid, text), day)
        target = path_for(src, harness, sid)
        if harness == "codex":
            target = target.with_name(target.name.replace("2026-02-10", day))
        write(target, lines)
    imported = run_import(root / "data", src)
    assert imported.returncode == 0, imported.stderr
    run("report", "--data", str(root / "data"))
    return root / "data" / "report"


@pytest.fixture
def page(browser: Any, site: Path) -> Iterator[Any]:
    p = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    p.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    p.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    p.goto((site / "index.html").resolve().as_uri())
    p.wait_for_load_state("load")
    try:
        yield p
        assert errors == []
    finally:
        p.close()


def _search(page: Any, query: str) -> list[dict[str, Any]]:
    """The hits the box lists for ``query``: each one's session (from its link), snippet and marked words."""
    page.fill("#s-q", "")
    page.fill("#s-q", query)
    page.wait_for_function("() => /hit|No match/.test(document.getElementById('s-status').textContent)")
    return page.eval_on_selector_all("#s-hits li", """els => els.map(li => ({
        href: li.querySelector('a').getAttribute('href'), meta: li.querySelector('.meta').innerText,
        snip: li.querySelector('.snip').innerText,
        marked: Array.from(li.querySelectorAll('mark')).map(m => m.textContent)}))""")


def _sessions(hits: list[dict[str, Any]]) -> list[str]:
    return [next(s for s in PROMPTS if s in h["href"]) for h in hits if any(s in h["href"] for s in PROMPTS)]


def test_more_matches_rank_above_one_match_of_a_newer_session(page: Any) -> None:
    hits = _search(page, "wombat burrow")
    assert _sessions(hits)[:1] == [MANY], hits
    assert set(_sessions(hits)) == {MANY, ONCE, CODEX}
    assert _sessions(hits).index(MANY) < _sessions(hits).index(ONCE)
    # The hit shows the session's time and id, the record's kind, and the words marked in its snippet.
    first = hits[0]
    assert "2026-02-11" in first["meta"] and MANY in first["meta"] and "prompt #" in first["meta"].lower()
    assert {m.lower() for m in first["marked"]} == {"wombat", "burrow"}
    assert "best first" in page.inner_text("#s-status")


def test_case_and_accents_are_folded(page: Any) -> None:
    hits = _search(page, "cafe CREME naive")
    assert _sessions(hits) == [ACCENT]
    assert hits[0]["marked"] == ["Café", "Crème", "NAÏVE"]
    assert _sessions(_search(page, "CAFÉ")) == [ACCENT]


def test_a_word_matches_whole_words_and_its_start_only_when_nothing_else_does(page: Any) -> None:
    # "cat" is a word of one prompt and part of "concatenate" in another: only the word is a hit.
    hits = _search(page, "cat")
    assert _sessions(hits) == [PHRASE]
    assert hits[0]["marked"] == ["cat"]
    # No word "harmon": the last word typed is taken as the start of longer ones, and the box says so.
    hits = _search(page, "harmon")
    assert _sessions(hits) == [PHRASE]
    assert hits[0]["marked"] == ["harmonica"]
    assert "start of longer" in page.inner_text("#s-status")
    hits = _search(page, "sunrise harmon")
    assert _sessions(hits) == [PHRASE] and hits[0]["marked"] == ["harmonica", "sunrise"]
    assert _search(page, "harmon sunrise") == []  # only the word being typed (the last) is a prefix


def test_a_phrase_is_its_words_in_order(page: Any) -> None:
    hits = _search(page, '"harmonica sunrise"')  # a comma and spaces between them in the text
    assert _sessions(hits) == [PHRASE]
    assert hits[0]["marked"] == ["harmonica", "sunrise"]
    assert _search(page, '"sunrise harmonica"') == []
    assert "no match" in page.inner_text("#s-status").lower()
    assert _sessions(_search(page, "play sunrise")) == [PHRASE]  # words, not a phrase: any order


def test_the_filters_still_apply(page: Any) -> None:
    page.select_option("#f-h", "codex")
    assert _sessions(_search(page, "wombat burrow")) == [CODEX]
    page.select_option("#f-h", "claude_code")
    page.wait_for_function("() => /hit|No match/.test(document.getElementById('s-status').textContent)")
    assert CODEX not in _sessions(_search(page, "wombat burrow"))
    assert _search(page, "codex wombat") == []
    assert "in the sessions these filters choose" in page.inner_text("#s-status")


def test_no_planted_secret_in_any_file_of_the_site(site: Path) -> None:
    files = [p for p in sorted(site.rglob("*")) if p.is_file()]
    shipped = b"".join(readable_bytes(p) for p in (site / "search").glob("*.js"))
    assert b"harmonica" in shipped  # the control: the prompt that held it is shipped
    for p in files:
        b = readable_bytes(p)
        assert TOKEN.encode() not in b, p
        assert re.search(rb"ghp_[A-Za-z0-9]{20}", b) is None, p


def _cli_sessions(site: Path, *query: str) -> set[str]:
    """The planted sessions ``rematch search`` finds for ``query`` in the data folder the report was built from."""
    import json

    res = rematch("search", "--data", str(site.parent), "--json", "--limit", "1000", "--", *query)
    assert res.returncode in (0, 1), res.stderr
    hits = json.loads(res.stdout) if res.returncode == 0 else []
    return {s for s in PROMPTS for h in hits if h["session_id"] == s}


@pytest.mark.parametrize(("query", "expected"), [
    ("wombat -codex", {MANY, ONCE}),
    ("wombat -\"codex wombat\"", {MANY, ONCE}),
    ("harmonica OR wombat", {PHRASE, MANY, ONCE, CODEX}),
    ("cafe OR \"sunrise harmonica\"", {ACCENT}),  # the phrase's words are not in that order
    ("cafe OR \"harmonica sunrise\"", {ACCENT, PHRASE}),
    ("harmon*", {PHRASE}),
    ("concat* -cafe", set()),
    ("wombat burrow -garden", {MANY, CODEX}),
])
def test_the_query_forms_find_what_rematch_search_finds(page: Any, site: Path, query: str,
                                                        expected: set[str]) -> None:
    """``word*``, ``OR`` and ``-word`` in the box, as the command reads them: the same sessions."""
    hits = _search(page, query)
    assert set(_sessions(hits)) == expected, hits
    assert _cli_sessions(site, *query.split()) == expected
    if expected:
        assert "start of longer" not in page.inner_text("#s-status")  # a star is asked for, not a fallback
        assert all(m.lower() not in ("codex", "garden", "cafe") for h in hits for m in h["marked"])


def test_an_explicit_prefix_marks_the_longer_word_and_words_left_out_alone_find_nothing(page: Any) -> None:
    hits = _search(page, "harmon* sunrise")
    assert _sessions(hits) == [PHRASE] and sorted(hits[0]["marked"]) == ["harmonica", "sunrise"]
    assert _search(page, "-wombat") == []
    assert "not only what to leave out" in page.inner_text("#s-status")
