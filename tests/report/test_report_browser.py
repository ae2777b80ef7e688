"""The report in a real browser (Playwright driving the system Chromium), over the hostile corpus.

A dialog (an ``alert`` a payload would raise), a page error or a console error
(a CSP violation logs one) fails the test. A control page with an injected
script proves the dialog watch sees one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from page_check import parse
from report_gen import NAMES


class Watched:
    """A page whose dialogs, page errors and console errors are recorded."""

    def __init__(self, browser: Any) -> None:
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("dialog", self._dialog)
        self.page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        self.page.on("console", lambda m: self.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)

    def _dialog(self, d: Any) -> None:
        self.dialogs.append(d.message)
        d.dismiss()

    def open(self, path: Path) -> Any:
        self.page.goto(path.resolve().as_uri())
        self.page.wait_for_load_state("load")
        self.page.wait_for_timeout(300)  # let a deferred payload (an onload, an image error) fire if it can
        return self.page

    def clean(self) -> None:
        assert self.dialogs == [], f"transcript script ran: {self.dialogs}"
        assert self.errors == []


@pytest.fixture
def watched(browser: Any) -> Iterator[Watched]:
    w = Watched(browser)
    try:
        yield w
    finally:
        w.page.close()


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
        assert page.evaluate("() => document.scripts.length") <= 3
    assert not [m for m in watched.dialogs if m in NAMES]
    watched.clean()


def test_index_loads_draws_and_filters(hostile: dict[str, Any], watched: Watched, artifacts: Path) -> None:
    page = watched.open(hostile["report"] / "index.html")
    rows = page.locator("#sessions tbody tr")
    assert rows.count() == len(hostile["sessions"]) == 8
    # The charts drew (Chart.js sized its canvases).
    for cid in ("c-activity", "c-tokens", "c-cost"):
        assert page.evaluate(f"() => document.getElementById('{cid}').width") > 100
    assert page.locator("#t-sessions").inner_text() == "8"
    page.screenshot(path=str(artifacts / "index.png"), full_page=True)
    # Harness filter: the rows and the totals follow it.
    page.select_option("#f-h", "codex")
    visible = page.locator("#sessions tbody tr:not(.hidden-by-filter)")
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
    assert page.locator("#sessions tbody tr:not(.hidden-by-filter)").count() == 1
    page.click("#f-reset")
    assert page.locator("#sessions tbody tr:not(.hidden-by-filter)").count() == 8
    # Search is over the row's text; a hostile value is just text to match.
    page.fill("#f-q", "alert('cwd')")
    assert page.locator("#sessions tbody tr:not(.hidden-by-filter)").count() == 3
    page.fill("#f-q", "no such session")
    assert page.locator("#sessions tbody tr:not(.hidden-by-filter)").count() == 0
    assert page.locator("#empty").is_visible()
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
        ids = page.eval_on_selector_all("li.rec.hl", "els => els.map(e => e.id)")
        seqs = parse(path)
        assert ids, s["key"]
        assert all(i in seqs.ids for i in ids)
        # The reasons panel links each seq, and the link lands on the highlighted record.
        first = ids[0]
        page.click(f"a.seq-link[href='#{first}']")
        assert page.evaluate("() => location.hash") == f"#{first}"
        assert "redirect" in page.locator(f"#{first}").inner_text()
        # "only flagged records" hides the rest.
        page.check("#only-flagged")
        shown = page.eval_on_selector_all("li.rec", "els => els.filter(e => e.offsetParent !== null).length")
        assert shown == len(ids)
        page.uncheck("#only-flagged")
        if s["harness"] == "claude_code":
            page.evaluate("() => window.scrollTo(0, 0)")
            page.screenshot(path=str(artifacts / "session.png"), full_page=True)
    watched.clean()
