"""The session page's Conversation section in Chromium (Playwright, the system Chromium), on the shared
corpus: a Claude Code session with a compaction, an error cluster and a subagent, linked both ways."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
from page_check import Watched
from report_gen import rematch, run

MAIN = "8463c716-a2ea-4c14-9efa-87158ebd9f20"
REL = f"claude_code/projects/-Users-USER-handgemacht/{MAIN}.jsonl"
SUB = f"claude_code/projects/-Users-USER-handgemacht/{MAIN}/subagents/agent-a7be2f0.jsonl"


def test_the_conversation_section_reads_folds_flags_and_links(corpus_dir: Path, tmp_path: Path, watched: Watched,
                                                              artifacts: Path) -> None:
    src = tmp_path / "src"
    for rel in (REL, SUB):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpus_dir / rel, src / rel)
    data = tmp_path / "data"
    run("import", str(src), "--data", str(data), "-q")
    run("report", "--data", str(data))
    conv = orjson.loads(run("show", MAIN, "--data", str(data), "--format", "json").stdout)
    pages = data / "report" / "sessions"
    page = watched.open(pages / f"{MAIN}.html")
    section = page.locator("section#conversation")
    assert section.is_visible()
    assert page.locator("li.ce").count() >= len(conv["entries"])  # its own, and the subagent's nested ones
    # The flagged records: highlighted with their reason, one entry per seq of the error cluster.
    cluster = conv["flag_seqs"]["error_cluster"]
    ids = page.eval_on_selector_all("section#conversation li.ce.hl", "els => els.map(e => e.id)")
    assert ids == [f"conv-{q}" for q in cluster]
    assert "error cluster" in page.locator(f"#conv-{cluster[0]}").inner_text()
    # The reasons panel links each seq into the conversation too.
    page.click(f"a.conv-link[href='#conv-{cluster[0]}']")
    assert page.evaluate("() => location.hash") == f"#conv-{cluster[0]}"
    # A long output is folded; landing on its entry unfolds it, loaded whole from the page's folder.
    fold = page.locator(f"#conv-{cluster[0]} details.fold").first
    assert fold.get_attribute("open") is not None
    fold.locator(".lazy[data-state=done]").wait_for()
    assert len(fold.locator("pre").inner_text()) > 1000
    fold.locator("summary").click()
    assert fold.get_attribute("open") is None
    # The compaction reads as one: its trigger, its summary folded.
    compaction = page.locator("li.ce-compaction")
    assert compaction.count() == 1 and "context compacted (auto)" in compaction.inner_text().lower()
    # The subagent under the call that started it; its link, and the link back to that call.
    task = page.locator("li.ce-call:has(.subagent)")
    assert task.count() == 1
    call_id = next(e["call_id"] for e in conv["entries"] if e.get("subagent"))
    task.locator("details.nested > summary").click()
    task.locator("details.nested > .lazy[data-state=done]").wait_for()
    assert task.locator("details.nested li.ce").count() > 10
    page.evaluate("() => window.scrollTo(0, 0)")
    page.screenshot(path=str(artifacts / "conversation.png"), full_page=False)
    task.locator("a.sub-link").click()
    page.wait_for_load_state("load")
    assert page.url.endswith(f"{MAIN}.agent-a7be2f0.html")
    back = page.locator("a.parent-link")
    assert back.count() == 1
    back.click()
    page.wait_for_load_state("load")
    assert page.url.split("/")[-1] == f"{MAIN}.html#call-{call_id}"
    assert page.locator(f"[id='call-{call_id}']").count() == 1
    page.screenshot(path=str(artifacts / "conversation-call.png"), full_page=False)
    watched.clean()


def test_each_corpus_session_page_shows_its_conversation(corpus_dir: Path, tmp_path: Path, watched: Watched) -> None:
    """The report of the shared corpus: every session page has a conversation, none a note that it is missing."""
    data = tmp_path / "data"
    assert rematch("import", str(corpus_dir), "--data", str(data), "-q").returncode in (0, 1)  # 1: lines skipped
    run("report", "--data", str(data))
    sessions: list[dict[str, Any]] = orjson.loads(run("sessions", "--data", str(data), "--json").stdout)
    assert {s["harness"] for s in sessions} == {"claude_code", "codex", "omp", "pi"}
    for s in sessions:
        page = watched.open(data / "report" / "sessions" / f"{s['key']}.html")
        assert page.locator("section#conversation li.ce").count() > 0, s["key"]
        assert page.locator("section#conversation .conv-note").count() == 0, s["key"]
    watched.clean()
