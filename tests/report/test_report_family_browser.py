"""The session page's links to the session that started it and to the sessions it started (subagents,
sidechains, compaction runs), in Chromium, on the shared corpus: kept even where the conversation view
cannot nest a session under a call (a compaction run has no call; a subagent whose parent is not in the
report), and refreshed on a parent's page when a child is imported after it."""

from __future__ import annotations

import shutil
from pathlib import Path

from page_check import Watched
from report_gen import run

MAIN = "8463c716-a2ea-4c14-9efa-87158ebd9f20"
DIR = "claude_code/projects/-Users-USER-handgemacht"
TASK_SUB = f"{MAIN}.agent-a7be2f0"
COMPACT = f"{MAIN}.agent-acompact-f46190"
#: A Codex subagent rollout of the corpus whose parent thread's rollout is not in the corpus.
CODEX_SUB = "019d924b-53f5-78f1-a0d4-69aa13191f54"
CODEX_PARENT = "019d9249-e0ee-7020-a305-b6369cd02251"
CODEX_REL = f"codex/sessions/2026/04/15/rollout-2026-04-15T11-58-23-{CODEX_SUB}.jsonl"


def _copy(corpus_dir: Path, rel: str, src: Path) -> None:
    (src / rel).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(corpus_dir / rel, src / rel)


def test_a_session_page_links_its_parent_and_children(corpus_dir: Path, tmp_path: Path, watched: Watched,
                                                       artifacts: Path) -> None:
    src, data = tmp_path / "src", tmp_path / "data"
    _copy(corpus_dir, f"{DIR}/{MAIN}.jsonl", src)
    _copy(corpus_dir, f"{DIR}/{MAIN}/subagents/agent-a7be2f0.jsonl", src)
    _copy(corpus_dir, CODEX_REL, src)
    run("import", str(src), "--data", str(data), "-q")
    run("report", "--data", str(data))
    pages = data / "report" / "sessions"
    page = watched.open(pages / f"{MAIN}.html")
    family = page.locator("nav.family")
    assert family.count() == 1 and family.locator("a.family-parent").count() == 0
    assert family.locator("a.family-child").evaluate_all("els => els.map(e => e.getAttribute('href'))") == [
        f"{TASK_SUB}.html"]
    # The compaction run, imported later: the parent's page (its own trace unchanged) now lists it too.
    _copy(corpus_dir, f"{DIR}/{MAIN}/subagents/agent-acompact-f46190.jsonl", src)
    run("import", str(src), "--data", str(data), "-q")
    run("report", "--data", str(data))
    # The Task subagent: its link back goes to the call that started it (the conversation knows it).
    page = watched.open(pages / f"{TASK_SUB}.html")
    up = page.locator("nav.family a.family-parent")
    href = up.get_attribute("href")
    assert href is not None and href.startswith(f"{MAIN}.html#call-") and "by its call" in page.locator(
        "nav.family").inner_text()
    page = watched.open(pages / f"{MAIN}.html")
    children = page.locator("nav.family a.family-child")
    assert sorted(children.evaluate_all("els => els.map(e => e.getAttribute('href'))")) == sorted(
        [f"{TASK_SUB}.html", f"{COMPACT}.html"])
    page.screenshot(path=str(artifacts / "family-parent.png"), full_page=False)
    # The compaction run was started by no call: its page still links back to the main session, and on.
    page.click(f"nav.family a.family-child[href='{COMPACT}.html']")
    page.wait_for_load_state("load")
    assert page.url.endswith(f"{COMPACT}.html")
    up = page.locator("nav.family a.family-parent")
    assert up.count() == 1 and MAIN in up.inner_text()
    page.screenshot(path=str(artifacts / "family-child.png"), full_page=False)
    up.click()
    page.wait_for_load_state("load")
    assert page.url.endswith(f"{MAIN}.html")
    # A subagent whose parent is not in the report: the parent named, with no link to a page that is not there.
    page = watched.open(pages / f"{CODEX_SUB}.html")
    family = page.locator("nav.family")
    assert family.locator("a").count() == 0
    assert CODEX_PARENT in family.inner_text() and "not in this report" in family.inner_text()
    watched.clean()
