"""Issue 43, through the real ``rematch`` process: every search hit has a position, and the report's link
lands on the readable conversation entry (not the timeline's raw row, not the top of the page)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
from page_check import page_text
from test_cli_surprises import CC_ID, rematch, transcript


def test_every_search_hit_has_a_position_and_its_conversation_entry_carries_it(tmp_path: Path) -> None:
    data = tmp_path / "d"
    assert rematch("import", str(transcript(tmp_path / "src")), "--data", str(data)).returncode == 0
    proc = rematch("search", "build", "--data", str(data), "--json", "--limit", "50")
    assert proc.returncode == 0, proc.stderr
    hits = json.loads(proc.stdout)
    kinds = {h["kind"] for h in hits}
    assert {"assistant", "prompt", "tool"} <= kinds, kinds
    assert all(type(h["seq"]) is int for h in hits), hits
    text = rematch("search", "build", "--data", str(data))
    assert "#?" not in text.stdout
    # The assistant's hit is at its turn's seq, and the conversation shows it there.
    said = next(h for h in hits if h["kind"] == "assistant" and "clear" in h["snippet"])
    conv = json.loads(rematch("show", CC_ID, "--data", str(data), "--format", "json").stdout)
    entry = next(e for e in conv["entries"] if e["kind"] == "assistant" and "clear the build" in e["text"])
    assert entry["seq"] == said["seq"]
    shown = rematch("show", CC_ID, "--conversation", "--data", str(data)).stdout
    assert f"#{said['seq']} " in next(line for line in shown.splitlines() if "assistant" in line)
    # On the session page, that seq is the anchor of the conversation entry.
    assert rematch("report", "--data", str(data)).returncode == 0
    page = page_text(data / "report" / "sessions" / f"{CC_ID}.html")
    for h in hits:
        assert f'id="conv-{h["seq"]}"' in page, h
