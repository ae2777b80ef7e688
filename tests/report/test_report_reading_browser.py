"""Issue 43: the session page reads like a conversation, safely (Chromium, Playwright, the system Chromium).

The assistant's Markdown is rendered (hostile Markdown planted: raw HTML, a ``javascript:`` link, an
image that would reach the network), a file edit reads as a diff, and a search hit or a flag's link
lands on the conversation entry itself.
"""

from __future__ import annotations

import json
from pathlib import Path

from page_check import Watched
from report_gen import run

CC = (Path(__file__).resolve().parents[2] / "examples" / "transcripts" / "claude_code" / "projects" / "-home-dev-webapp"
      / "5b1f0c3e-8a7d-4e52-9b61-2f0d7c4a9e11.jsonl")
SID = CC.stem
HOSTILE_MD = ("# Plan\n\n**bold** and `code` <script>alert('md')</script> <img src=x onerror=alert('img')>\n\n"
              "[run](javascript:alert('link')) [docs](https://example.com/a) ![pixel](https://example.com/p.png)\n\n"
              "```py\nprint('fenced')\n```\n")
EDIT = {"file_path": "/home/dev/webapp/src/app.ts", "old_string": "const a = 1;\nconst b = 2;\n",
        "new_string": "const a = 1;\nconst b = 3;\n"}


def _session(folder: Path) -> Path:
    """The example Claude Code session, its first answer hostile Markdown and its second call a file edit."""
    out = []
    for line in CC.read_text().splitlines():
        rec = json.loads(line)
        content = (rec.get("message") or {}).get("content")
        if isinstance(content, list):
            for block in content:
                if block.get("text") == "I'll clear the build folder first.":
                    block["text"] = HOSTILE_MD
                if block.get("id") == "toolu_02":
                    block["name"], block["input"] = "Edit", EDIT
        out.append(json.dumps(rec))
    folder.mkdir(parents=True)
    path = folder / CC.name
    path.write_text("\n".join(out) + "\n")
    return path


def test_markdown_is_rendered_safely_and_an_edit_reads_as_a_diff(tmp_path: Path, watched: Watched) -> None:
    data = tmp_path / "data"
    run("import", str(_session(tmp_path / "src")), "--data", str(data), "-q")
    run("report", "--data", str(data))
    page = watched.open(data / "report" / "sessions" / f"{SID}.html")
    # The answer is long: folded, its text kept in the page's folder and loaded (from file://) when unfolded,
    # parsed as the page's own markup (no script in it runs: watched.clean() below sees no dialog or error).
    answer = page.locator("li.ce-assistant details.fold").first
    assert answer.locator(".md").count() == 0
    answer.locator("summary").click()
    answer.locator(".lazy[data-state=done]").wait_for()
    md = page.locator("li.ce-assistant .md").first
    assert md.locator("h1").inner_text() == "Plan" and md.locator("strong").inner_text() == "bold"
    assert md.locator("pre code").inner_text().strip() == "print('fenced')"
    # Raw HTML is text; no script, image or handler made it into the page; a javascript: link is no link.
    assert "<script>alert('md')</script>" in md.inner_text()
    assert md.locator("script, img, [onerror]").count() == 0
    assert page.locator("a[href^='javascript']").count() == 0
    links = md.locator("a")
    assert links.count() == 2 and {links.nth(i).get_attribute("href") for i in range(2)} == {
        "https://example.com/a", "https://example.com/p.png"}
    assert all("noopener" in (links.nth(i).get_attribute("rel") or "") for i in range(2))
    # The edit: a unified diff, the changed line removed and added, not old_string/new_string.
    edit = page.locator("li.ce-call pre.diff")
    assert edit.count() == 1
    assert edit.locator(".d-del").inner_text() == "-const b = 2;"
    assert edit.locator(".d-add").inner_text() == "+const b = 3;"
    assert "old_string" not in page.locator("li.ce-call").nth(1).inner_text()
    watched.clean()  # no dialog opened, no page error, no CSP violation


def test_a_search_hit_on_an_answer_lands_on_its_conversation_entry(tmp_path: Path, watched: Watched) -> None:
    data = tmp_path / "data"
    run("import", str(_session(tmp_path / "src")), "--data", str(data), "-q")
    hits = json.loads(run("search", "fenced", "--data", str(data), "--json").stdout)
    assert [h["kind"] for h in hits] == ["assistant"] and type(hits[0]["seq"]) is int
    run("report", "--data", str(data))
    page = watched.open(data / "report" / "index.html")
    page.fill("#s-q", "fenced")
    link = page.locator("#s-hits li a").first
    link.wait_for()
    assert link.get_attribute("href") == f"sessions/{SID}.html#conv-{hits[0]['seq']}"
    # Followed as the browser follows it (the hits list may be drawn again under the pointer while the
    # index's files load, so the address is opened rather than the element clicked).
    page.goto((data / "report" / "sessions" / f"{SID}.html").resolve().as_uri() + f"#conv-{hits[0]['seq']}")
    page.wait_for_load_state("load")
    target = page.locator(f"#conv-{hits[0]['seq']}")
    # Landing on it unfolds its long text (loaded from the page's folder), where the word is.
    target.locator(".lazy[data-state=done]").first.wait_for()
    assert "ce-assistant" in (target.get_attribute("class") or "") and "fenced" in target.inner_text()
    assert target.is_visible() and page.evaluate("() => window.scrollY") > 0
    watched.clean()


def _shifted(folder: Path, sid: str, days: int, redirects: int = 0) -> Path:
    """The example session under another id, ``days`` earlier, with ``redirects`` more redirecting prompts."""
    import datetime as dt

    out = []
    for n, line in enumerate(CC.read_text().splitlines()):
        rec = json.loads(line.replace(SID, sid))
        when = dt.datetime.fromisoformat(rec["timestamp"].replace("Z", "+00:00")) - dt.timedelta(days=days)
        rec["timestamp"] = when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        out.append(rec)
        if n == 5:
            for k in range(redirects):
                more = json.loads(json.dumps(rec))
                more["uuid"] = f"00000000-0000-4000-9000-{k:012d}"
                more["message"]["content"] = f"no, stop that, undo it ({k})"
                out.append(more)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in out))
    return path


def test_the_index_over_a_long_span_and_a_phone_sized_session_page(tmp_path: Path, watched: Watched,
                                                                    artifacts: Path) -> None:
    src, data = tmp_path / "src", tmp_path / "data"
    _shifted(src, SID, 0, redirects=80)
    for n, days in enumerate((120, 300, 420)):
        _shifted(src, f"5b1f0c3e-8a7d-4e52-9b61-2f0d7c4a9f0{n}", days)
    run("import", str(src), "--data", str(data), "-q")
    run("report", "--data", str(data))
    page = watched.open(data / "report" / "index.html")
    # 420 days: the charts add up weeks, and say so.
    assert page.locator(".chart .per").first.inner_text() == "week (from Monday)"
    labels = page.evaluate("() => Chart.getChart('c-activity').data.labels")
    assert 55 <= len(labels) <= 65, labels[-5:]
    assert all(page.evaluate(f"() => new Date('{x}T00:00:00Z').getUTCDay()") == 1
                                           for x in labels[:3])
    sessions = page.evaluate("() => Chart.getChart('c-activity').data.datasets[1].data.reduce((a, b) => a + b, 0)")
    assert sessions == 4
    # The sessions table has a cost column, and its header stays in view while its rows scroll.
    heads = page.locator("table.sessions thead th").all_inner_texts()
    assert [h.lower() for h in heads][-2:] == ["cost", "flags"]
    assert all(c.startswith(("$", "<$", "n/a")) for c in page.locator("table.sessions td.cost").all_inner_texts())
    page.set_viewport_size({"width": 1400, "height": 240})
    bar = page.evaluate("() => document.querySelector('header.top').getBoundingClientRect().bottom")
    # Scrolled to the end: the table's first rows have gone by under the bar.
    page.evaluate("() => window.scrollTo(0, document.documentElement.scrollHeight)")
    table_top = page.evaluate("() => document.querySelector('table.sessions').getBoundingClientRect().top")
    assert table_top < bar, (table_top, bar)
    top = page.evaluate("() => document.querySelector('table.sessions thead th').getBoundingClientRect().top")
    assert abs(top - bar) <= 2, (top, bar)
    watched.clean()
    # At 375 px, the session page does not scroll sideways: the long seq list wraps, and the risky
    # action's summary is on screen.
    page.set_viewport_size({"width": 375, "height": 800})
    watched.open(data / "report" / "sessions" / f"{SID}.html")
    assert page.locator("section.why .seq-link").count() > 60
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 375
    summary = page.locator("table.risky td.summary").first
    box = summary.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 375 and summary.is_visible()
    assert "rm -rf" in summary.inner_text()
    page.screenshot(path=str(artifacts / "session-375.png"), full_page=False)
    watched.clean()
