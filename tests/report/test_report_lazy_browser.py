"""Issues 40 and 43: a session page keeps its long sections in its own folder and loads them when unfolded,
from ``file://`` (Chromium, Playwright): the whole text is there once unfolded, a hostile text stays text,
and a link to a timeline record loads the timeline first."""

from __future__ import annotations

import json
from pathlib import Path

from page_check import Watched, page_text
from report_gen import run

CC = (Path(__file__).resolve().parents[2] / "examples" / "transcripts" / "claude_code" / "projects" / "-home-dev-webapp"
      / "5b1f0c3e-8a7d-4e52-9b61-2f0d7c4a9e11.jsonl")
SID = CC.stem
#: A long tool output whose lines try to leave the page's markup, the section's script string and its JSON.
HOSTILE = ["</pre><img src=x onerror=\"window.__pwned=1\">",
           "<script>window.__pwned=2</script>",
           "\");window.__pwned=3;//",
           "\"]);window.__pwned=4;//",
           "<svg onload=\"window.__pwned=5\"></svg>",
           "<template><script>window.__pwned=6</script></template>",
           *[f"line {i} of the vitest run" for i in range(400)],
           "THE LAST LINE"]


def _session(folder: Path) -> Path:
    """The example Claude Code session, its second call's output the long hostile text above."""
    out = []
    for line in CC.read_text().splitlines():
        rec = json.loads(line)
        content = (rec.get("message") or {}).get("content")
        if isinstance(content, list):
            for block in content:
                if block.get("type") == "tool_result" and block.get("tool_use_id") == "toolu_02":
                    block["content"] = "\n".join(HOSTILE)
        out.append(json.dumps(rec))
    folder.mkdir(parents=True)
    path = folder / CC.name
    path.write_text("\n".join(out) + "\n")
    return path


def test_a_folded_output_unfolds_from_file_and_stays_text(tmp_path: Path, watched: Watched) -> None:
    data = tmp_path / "data"
    run("import", str(_session(tmp_path / "src")), "--data", str(data), "-q")
    run("report", "--data", str(data))
    path = data / "report" / "sessions" / f"{SID}.html"
    # The page holds the output's start; the rest is in the page's folder, compressed.
    assert "THE LAST LINE" not in path.read_text() and "THE LAST LINE" in page_text(path)
    assert [p.suffix for p in (path.parent / SID).iterdir()] == [".js"]
    page = watched.open(path)
    fold = page.locator("li.ce-call details.fold.output").first
    assert fold.locator(".lazy").inner_text() == ""
    fold.locator("summary").click()
    fold.locator(".lazy[data-state=done]").wait_for()
    # Unfolded: every line as the transcript has it, shown as text; nothing of it became markup or ran.
    assert fold.locator("pre").inner_text() == "\n".join(HOSTILE)
    assert fold.locator("img, script, svg, template").count() == 0
    assert page.evaluate("() => window.__pwned") is None
    watched.clean()  # no dialog, no page error, no CSP violation


def test_a_link_to_a_timeline_record_loads_the_timeline(tmp_path: Path, watched: Watched) -> None:
    data = tmp_path / "data"
    run("import", str(_session(tmp_path / "src")), "--data", str(data), "-q")
    run("report", "--data", str(data))
    page = watched.open(data / "report" / "sessions" / f"{SID}.html")
    assert page.locator("li.rec").count() == 0  # the timeline is in the page's folder until asked for
    link = page.locator("li.ce-call a.seq").first
    href = link.get_attribute("href") or ""
    link.click()
    record = page.locator(href)
    record.wait_for()
    assert page.locator("#timeline-fold").get_attribute("open") is not None and record.is_visible()
    assert page.evaluate("() => location.hash") == href
    watched.clean()
