"""The report in a real browser (Playwright driving the system Chromium), over the hostile corpus.

A dialog (an ``alert`` a payload would raise), a page error or a console error
(a CSP violation logs one) fails the test. A control page with an injected
script proves the dialog watch sees one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hostile_gen import lines_for, make, path_for, run_import, sid_for, write
from page_check import Watched, embedded, parse, search_entries
from report_gen import NAMES, run


def test_the_dialog_watch_sees_an_injected_alert(watched: Watched, tmp_path: Path) -> None:
    """Control: the same watch on a page that does run an injected script records its alert."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><title>x</title><script>alert('prompt')</script>")
    watched.open(bad)
    assert watched.dialogs == ["prompt"]


def test_no_page_runs_transcript_script(hostile: dict[str, Any], watched: Watched) -> None:
    report = hostile["report"]
    for path in [report / "index.html", *sorted((report / "sessions").glob("*.html"))]:
        page = watched.open(path)
        # Expand every collapsed text too: what is inside shows as text.
        for d in page.query_selector_all("details"):
            d.evaluate("e => { e.open = true; }")
        page.wait_for_timeout(50)
        # Our own only: the data block, Chart.js, index.js and tree.js (index), fewer on a session page.
        assert page.evaluate("() => document.scripts.length") <= 4
    assert not [m for m in watched.dialogs if m in NAMES]
    watched.clean()


def test_index_loads_draws_and_filters(hostile: dict[str, Any], watched: Watched, artifacts: Path) -> None:
    page = watched.open(hostile["report"] / "index.html")
    rows = page.locator("#sessions tbody tr[data-k]")
    assert rows.count() == len(hostile["sessions"]) == 8
    # The charts drew (Chart.js sized its canvases).
    for cid in ("c-activity", "c-tokens", "c-cost"):
        assert page.evaluate(f"() => document.getElementById('{cid}').width") > 100
    assert page.locator("#t-sessions").inner_text() == "8"
    page.screenshot(path=str(artifacts / "index.png"), full_page=True)
    # Harness filter: the rows and the totals follow it.
    page.select_option("#f-h", "codex")
    visible = page.locator("#sessions tbody tr[data-k]:not(.hidden-by-filter)")
    assert visible.count() == 2
    assert all("codex" in visible.nth(i).inner_text() for i in range(2))
    assert page.locator("#t-sessions").inner_text() == "2"
    # Flag filter on top: the flagged codex session only.
    page.select_option("#f-f", "redirect")
    assert visible.count() == 1
    assert page.locator("#t-redirects").inner_text() == "1"
    # The filter is kept in the address, so a reload (or a shared link) shows the same.
    page.reload()
    page.wait_for_load_state("load")
    assert page.locator("#sessions tbody tr[data-k]:not(.hidden-by-filter)").count() == 1
    page.click("#f-reset")
    assert page.locator("#sessions tbody tr[data-k]:not(.hidden-by-filter)").count() == 8
    # Search is over the row's text; a hostile value is just text to match.
    page.fill("#f-q", "alert('cwd')")
    assert page.locator("#sessions tbody tr[data-k]:not(.hidden-by-filter)").count() == 3
    page.fill("#f-q", "no such session")
    assert page.locator("#sessions tbody tr[data-k]:not(.hidden-by-filter)").count() == 0
    assert page.locator("#empty").is_visible()
    watched.clean()


def test_filter_menus_label_hidden_characters_escaped(hostile: dict[str, Any], watched: Watched) -> None:
    """The menus' labels show a bidi override, a zero-width or a tag character as an escape; choosing the
    hostile model still filters to exactly its sessions (the option's value is the exact model)."""
    from report_gen import MODEL

    page = watched.open(hostile["report"] / "index.html")
    hidden = {"\u200b", "\u200e", "\u200f", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067",
              "\u2068", "\u2069", "\ufeff"}
    for sel in ("#f-h", "#f-m", "#f-r", "#f-d"):
        for text in page.eval_on_selector(sel, "s => Array.from(s.options).map(o => o.text)"):
            assert text.isprintable() and not hidden & set(text), (sel, text)
            assert not any(0xE0000 <= ord(c) <= 0xE007F for c in text), (sel, text)
    texts = page.eval_on_selector("#f-m", "s => Array.from(s.options).map(o => o.text)")
    assert "anthropic/m\\u200b\\u202e\\U000e0041</script><script>alert('model')</script>" in texts
    page.select_option("#f-m", "anthropic/" + MODEL)
    sessions = embedded(parse(hostile["report"] / "index.html"))["sessions"]
    want = sum(s["m"] == "anthropic/" + MODEL for s in sessions)
    assert want > 0 and page.locator("#sessions tbody tr[data-k]:not(.hidden-by-filter)").count() == want
    watched.clean()


def test_index_links_resolve_in_the_browser(hostile: dict[str, Any], watched: Watched) -> None:
    index = hostile["report"] / "index.html"
    page = watched.open(index)
    hrefs = page.eval_on_selector_all("#sessions a", "els => els.map(e => e.href)")
    assert len(hrefs) == 8
    for href in hrefs:
        resp = page.goto(href)
        assert resp is not None and resp.ok, href
        assert page.locator("h1").count() == 1
    watched.clean()


def test_session_page_highlights_flagged_seqs(hostile: dict[str, Any], watched: Watched, artifacts: Path) -> None:
    flagged = [s for s in hostile["sessions"] if s["reasons"]]
    assert len(flagged) == 3
    for s in flagged:
        path = hostile["report"] / "sessions" / f"{s['key']}.html"
        page = watched.open(path)
        # The timeline is kept in the page's folder: unfolded, it is loaded (from file://) in place.
        assert page.locator("li.rec").count() == 0
        page.click("#timeline-fold > summary")
        page.wait_for_selector("li.rec")
        ids = page.eval_on_selector_all("li.rec.hl", "els => els.map(e => e.id)")
        seqs = parse(path)
        assert ids, s["key"]
        assert all(i in seqs.ids for i in ids)
        # The reasons panel links each seq once: to its conversation entry when the page has one, else to
        # the highlighted record; a conversation entry that is missing falls back to the record.
        first = ids[0]
        num = first.removeprefix("seq-")
        assert page.locator(f"section.why a.seq-link:text-is('#{num}')").count() == 1
        href = page.locator(f"section.why a.seq-link:text-is('#{num}')").get_attribute("href")
        page.click(f"section.why a.seq-link[href='{href}']")
        assert page.evaluate("() => location.hash") == href
        landed = page.locator(href) if page.locator(href).count() else page.locator(f"#{first}")
        assert "redirect" in landed.inner_text()
        # "only flagged records" hides the rest.
        page.check("#only-flagged")
        shown = page.eval_on_selector_all("li.rec", "els => els.filter(e => e.offsetParent !== null).length")
        assert shown == len(ids)
        page.uncheck("#only-flagged")
        if s["harness"] == "claude_code":
            page.evaluate("() => window.scrollTo(0, 0)")
            page.screenshot(path=str(artifacts / "session.png"), full_page=True)
    watched.clean()


@pytest.fixture(scope="module")
def facets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report whose sessions differ in every facet the index filters by: harness, model, repository (two
    folders with a git origin, one without), domain (from a REMATCH_CONFIG inference table) and flag."""
    root = tmp_path_factory.mktemp("facets")
    folders = {}
    for name, origin in (("alpha", "git@github.com:acme/alpha.git"), ("beta", "https://github.com/acme/beta"),
                         ("plain", None)):
        top = root / "work" / name
        (top / ".git").mkdir(parents=True)
        if origin is None:
            (top / ".git").rmdir()
        else:
            (top / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
            (top / ".git" / "config").write_text(f'[remote "origin"]\n\turl = {origin}\n')
        folders[name] = str(top)
    config = root / "config.yml"
    config.write_text(f"domains:\n  - {{path: '{folders['alpha']}*', domain: web}}\n"
                      f"  - {{path: '{folders['beta']}*', domain: infra}}\n")
    src = root / "src"
    make(src, "claude_code", 1, cwd=folders["alpha"])
    turned = lines_for("claude_code", sid_for("claude_code", 2), cwd=folders["beta"], turns=3)
    turned[5]["message"]["content"] = "no, stop, that is wrong"  # a redirect: the session is flagged
    write(path_for(src, "claude_code", sid_for("claude_code", 2)), turned)
    make(src, "codex", 1, cwd=folders["beta"])
    make(src, "omp", 1, cwd=folders["plain"])
    imported = run_import(root / "data", src, REMATCH_CONFIG=str(config))
    assert imported.returncode == 0, imported.stderr
    run("report", "--data", str(root / "data"))
    return root / "data" / "report" / "index.html"


def _expect(sessions: list[dict[str, Any]], key: str, value: str) -> set[str]:
    """The sessions a filter shows: each main session with everything under it (its tree, ``g``) when it or
    any of them matches."""
    if key != "f":
        hit = {s["k"] for s in sessions if s[key] == value}
    else:
        hit = {s["k"] for s in sessions if (s["f"] if value == "-" else not s["f"] if value == "+" else value in s["f"])}
    trees = {s.get("g") or s["k"] for s in sessions if s["k"] in hit}
    return {s["k"] for s in sessions if (s.get("g") or s["k"]) in trees}


def check_every_filter(page: Any, sessions: list[dict[str, Any]]) -> int:
    """Choose every option of every filter, one at a time: the visible rows and the sessions card must be
    exactly the sessions the embedded data says match. Returns how many options were tried."""
    tried = 0
    for sel in ("#f-h", "#f-m", "#f-r", "#f-d", "#f-f"):
        key = page.get_attribute(sel, "data-key")
        values = [v for v in page.eval_on_selector(sel, "s => Array.from(s.options).map(o => o.value)") if v]
        for value in values:
            page.select_option(sel, value)
            shown = set(page.eval_on_selector_all("#sessions tbody tr[data-k]:not(.hidden-by-filter)",
                                                  "els => els.map(e => e.dataset.k)"))
            want = _expect(sessions, key, value)
            assert shown == want, (sel, value)
            # A session under another one is not counted as a session of its own.
            mains = [s for s in sessions if s["k"] in want and not s.get("c")]
            assert page.locator("#t-sessions").inner_text() == str(len(mains)), (sel, value)
            tried += 1
        page.select_option(sel, "")
    return tried


def test_every_filter_by_harness_model_repository_domain_and_flag(facets: Path, watched: Watched,
                                                                   artifacts: Path) -> None:
    page = watched.open(facets)
    sessions = embedded(parse(facets))["sessions"]
    # A session without a git remote is filtered by its folder (issue 32).
    plain = str(facets.parents[2] / "work" / "plain")
    assert {s["r"] for s in sessions} == {"github.com/acme/alpha", "github.com/acme/beta", plain}
    assert {s["d"] for s in sessions} == {"web", "infra", ""}
    assert [s["f"] for s in sessions if s["f"]] == [["redirect"]]
    # harnesses 3, models 3, repositories 3 (two remotes, one folder), domains 2, flag choices 5 (flagged,
    # three reasons, not flagged)
    assert check_every_filter(page, sessions) == 16
    # Two filters at once: the intersection.
    page.select_option("#f-r", "github.com/acme/beta")
    page.select_option("#f-h", "claude_code")
    shown = page.eval_on_selector_all("#sessions tbody tr[data-k]:not(.hidden-by-filter)", "els => els.map(e => e.dataset.k)")
    assert shown == [s["k"] for s in sessions if s["r"] == "github.com/acme/beta" and s["h"] == "claude_code"]
    page.screenshot(path=str(artifacts / "index-filtered.png"), full_page=True)
    watched.clean()


def test_every_filter_on_the_shared_corpus(corpus_dir: Path, tmp_path: Path, watched: Watched) -> None:
    data = tmp_path / "data"
    assert run_import(data, corpus_dir, timeout=600).returncode in (0, 1)
    run("report", "--data", str(data))
    index = data / "report" / "index.html"
    page = watched.open(index)
    sessions = embedded(parse(index))["sessions"]
    assert check_every_filter(page, sessions) >= 3 + 10 + 4
    page.select_option("#f-h", "")
    check_search_per_harness(page, data / "report", sessions)
    # Every session page of the real corpus opens without an error, and its flagged records are highlighted.
    for s in sessions:
        p = watched.open(data / "report" / "sessions" / f"{s['k']}.html")
        if s["f"]:
            p.click("#timeline-fold > summary")  # the timeline is loaded from the page's folder when unfolded
            p.wait_for_selector("li.rec")
            assert p.locator("li.rec.hl").count() > 0, s["k"]
    watched.clean()


def test_corpus_index_folds_children_under_their_main_session(corpus_dir: Path, tmp_path: Path, watched: Watched,
                                                               artifacts: Path) -> None:
    """The shared corpus's index: sessions grouped by project, each main session's subagents, sidechains and
    compaction runs folded under it (expand and collapse), the sessions card counting main sessions only."""
    data = tmp_path / "data"
    assert run_import(data, corpus_dir, timeout=600).returncode in (0, 1)
    run("report", "--data", str(data))
    index = data / "report" / "index.html"
    page = watched.open(index)
    sessions = embedded(parse(index))["sessions"]
    mains = [s for s in sessions if not s.get("c")]
    assert page.locator("#t-sessions").inner_text() == str(len(mains))
    assert page.locator("#sessions tbody.tree").count() == len(mains)
    # Children start folded: only main sessions' rows (and project headings) are visible.
    visible = page.eval_on_selector_all("#sessions tbody tr[data-k]", "els => els.filter(e => e.offsetParent).map(e => e.dataset.k)")
    assert sorted(visible) == sorted(s["k"] for s in mains)
    demo = next(s for s in mains if s["k"].startswith("fe5e1c67"))
    tree = page.locator(f'#sessions tbody.tree[data-g="{demo["k"]}"]')
    button = tree.locator("button.fold")
    assert button.inner_text() == "\u25b8 5 under it" and button.get_attribute("aria-expanded") == "false"
    button.click()
    assert button.get_attribute("aria-expanded") == "true"
    shown = tree.locator("tr[data-k]").evaluate_all("els => els.filter(e => e.offsetParent).map(e => e.dataset.k)")
    assert shown == [demo["k"], *(f"{demo['k']}.sidechain-{i}" for i in range(1, 6))]
    page.screenshot(path=str(artifacts / "index-grouped.png"), full_page=True)
    button.click()
    assert tree.locator("tr[data-k]").evaluate_all("els => els.filter(e => e.offsetParent).length") == 1
    # The Codex subagent whose parent's rollout is not in the corpus stays listed, marked orphan.
    orphan = [s for s in sessions if s.get("o")]
    assert [s["h"] for s in orphan] == ["codex"]
    assert "orphan" in page.locator(f'tr[data-k="{orphan[0]["k"]}"]').inner_text()
    # A filter that only a child matches shows its whole session, and hides the projects it empties.
    page.select_option("#f-m", "anthropic/claude-haiku-4-5")  # one row per model: the dated id folded
    visible_trees = page.eval_on_selector_all("#sessions tbody.tree", "els => els.filter(e => e.querySelector('tr[data-k]:not(.hidden-by-filter)')).map(e => e.dataset.g)")
    # The trees holding a session of that model (the model's dated and undated ids are one), each once.
    haiku = "anthropic/claude-haiku-4-5"
    by_key = {s["k"]: s for s in sessions}
    want = {s["g"] for s in sessions if s["m"] == haiku or any(u[1] == haiku for u in s["u"])}
    assert any(s.get("c") for s in sessions if s["g"] in want and (s["m"] == haiku or any(u[1] == haiku for u in s["u"])))
    assert sorted(visible_trees) == sorted(want) and page.locator("#t-sessions").inner_text() == str(len(want))
    projects = {by_key[g]["r"] for g in want}
    assert page.eval_on_selector_all("#sessions tbody.project", "els => els.filter(e => !e.hidden).length") == len(projects)
    watched.clean()


def check_search_per_harness(page: Any, report: Path, sessions: list[dict[str, Any]]) -> None:
    """For each harness, the rarest word of its sessions' shipped search text, typed into the search box,
    finds a record of a session of that harness, linked to its page."""
    import re
    from collections import Counter

    entries = []
    for p in sorted((report / "search").glob("*.js")):
        entries += search_entries(p)
    harness = {s["k"]: s["h"] for s in sessions}
    words: dict[str, set[str]] = {}
    count: Counter[str] = Counter()
    for key, _sid, recs, _stamp in entries:
        for r in recs:
            # Whole words as the box's tokenizer makes them (letters and digits; "_" separates).
            for w in {t for t in re.findall(r"[^\W_]+", r[3].lower()) if re.fullmatch(r"[a-z]{7,}", t)}:
                count[w] += 1
                words.setdefault(w, set()).add(key)
    for h in sorted(set(harness.values())):
        mine = [w for w, keys in words.items() if any(harness.get(k) == h for k in keys)]
        assert mine, h
        word = min(mine, key=lambda w: (count[w], w))
        page.fill("#s-q", word)
        page.wait_for_function("() => /hit|No match/.test(document.getElementById('s-status').textContent)")
        hrefs = page.eval_on_selector_all("#s-hits li a", "els => els.map(e => e.getAttribute('href'))")
        keys = {h_.split("/", 1)[1].split(".html", 1)[0] for h_ in hrefs}
        assert any(harness.get(k) == h for k in keys), (h, word, hrefs)
        page.fill("#s-q", "")
