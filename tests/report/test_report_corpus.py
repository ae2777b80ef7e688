"""The shared corpus of real transcripts, imported and reported: safe pages, links that resolve, the ledger's
flags highlighted, and figures that agree with ``rematch stats``."""

from __future__ import annotations

import json
import re
import sqlite3
from decimal import Decimal
from pathlib import Path

from hostile_gen import run_import
from page_check import broken_links, embedded, page_text, parse, unsafe_markup
from report_gen import rematch


def test_corpus_report(corpus_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    imported = run_import(data, corpus_dir, timeout=600)
    assert imported.returncode in (0, 1), imported.stderr
    res = rematch("report", "--data", str(data))
    assert res.returncode == 0, res.stderr
    report = data / "report"
    with sqlite3.connect(data / "ledger.sqlite") as db:
        rows = db.execute("SELECT trace_path, redirect_seqs, error_cluster_seqs, mark_seqs FROM sessions").fetchall()
    assert len(rows) >= 10
    parsed = {p.resolve(): parse(p) for p in [report / "index.html", *report.glob("sessions/*.html")]}
    assert len(parsed) == len(rows) + 1
    for path, page in parsed.items():
        assert unsafe_markup(page) == [], path
        assert broken_links(path, page, parsed) == [], path
    risky_pages = 0
    for trace_path, *seqs in rows:
        page = page_text(report / "sessions" / f"{Path(trace_path).stem}.html")
        flagged = {int(s) for col in seqs for s in json.loads(col)}
        shown = {int(x) for x in re.findall(r'<li class="rec [^"]*\bhl"[^>]* id="seq-(\d+)"', page)}
        assert shown == flagged, trace_path
        # Risky actions most severe first.
        severities = [int(x) for x in re.findall(r'<tr class="sev sev-\w+">\s*<td class="n"[^>]*>(\d+)</td>', page)]
        assert severities == sorted(severities, reverse=True), trace_path
        risky_pages += bool(severities)
    assert risky_pages >= 3
    stats = json.loads(rematch("stats", "--out", str(data), "--json").stdout)
    sessions = embedded(parsed[(report / "index.html").resolve()])["sessions"]
    assert len(sessions) == len(rows)
    # A session under another one (subagent, sidechain, compaction run) is counted with its main session.
    assert stats["total"]["sessions"] == sum(not s.get("c") for s in sessions) == 17
    assert stats["total"]["tokens"] == sum(u[2] for s in sessions for u in s["u"]) > 0
    # omp states costs; Claude Code's and Codex's turns are priced from the table: every model the corpus
    # names is in it, so the whole of the tokens is priced, and the index's script sums the same cost.
    assert stats["total"]["priced_share"] == 1 and stats["unpriced_models"] == []
    # (each entry is rounded to a billionth: omp states costs with more digits than that)
    entries = [u for s in sessions for u in s["u"]]
    assert abs(sum(u[3] for u in entries) - Decimal(stats["total"]["cost"]) * 10**9) <= len(entries) / 2
