"""The report's search box: how large its shipped index grows per GiB of transcripts, and what it costs.

    python bench/report_search.py --size-mb 256    # real Claude Code sessions copied with fresh ids

Builds (or reuses) an archive with bench/real_copies.py's builder in bench/out/report-search, imports it
(``rematch import``: traces, search.sqlite), then measures:

- ``rematch report`` cold (every page), and the search files' part of it (``write_index`` alone, cold
  and as a refresh that finds every session's entry in the files already written);
- the search files' bytes, capped (as shipped) and uncapped (every session), per GiB of transcripts,
  beside search.sqlite's;
- in Chromium (if installed): the page opened from file://, the first search (the files loaded and
  indexed), then each of a few queries, and the tab's JS heap; with ``--at-cap``, the same on a copy
  of the page whose search files repeat its sessions up to the 48 MB cap.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from real_copies import _DEFAULT_SOURCE, build, sessions_of  # noqa: E402
from run import corpus_size  # noqa: E402

GIB = 1024**3


def rematch(*args: str) -> float:
    """Wall seconds of one ``rematch`` command (it must succeed)."""
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rematch_trace.cli", *args], check=True, capture_output=True)
    return time.perf_counter() - t


def tree_bytes(root: Path) -> int:
    """Bytes of the files under ``root``."""
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


#: Queries typed after the first search (files loaded): words, a common word, a phrase, a word being typed
#: (no whole-word match: the prefix fallback), accents.
QUERIES = ("git status a", "error", '"git status"', "statu", "café résumé", "import json os path")


def browser_search(index: Path, query: str) -> dict[str, Any] | None:
    """Milliseconds to load the page, to the first search's hits (files loaded and indexed) and to each of
    :data:`QUERIES` after it (typing to hits shown, with the box's 120 ms pause), and the tab's JS heap."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return None
    done = "() => /hit|No match/.test(document.getElementById('s-status').textContent)"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--enable-precise-memory-info"])
        page = b.new_page()
        t = time.perf_counter()
        page.goto(index.resolve().as_uri())
        page.wait_for_load_state("load")
        load = time.perf_counter() - t
        out: dict[str, Any] = {"load_ms": round(load * 1000)}
        per: dict[str, Any] = {}
        for i, q in enumerate((query, *QUERIES)):
            t = time.perf_counter()
            page.fill("#s-q", q)
            page.wait_for_function(done, timeout=120_000)
            ms = round((time.perf_counter() - t) * 1000)
            status = page.inner_text("#s-status")
            if i == 0:
                out["first_search_ms"] = ms
                out["heap_mb"] = round(page.evaluate("performance.memory.usedJSHeapSize") / 1e6, 1)
            else:
                per[q] = {"ms": ms, "status": status[:80]}
            if i == 1:
                out["second_search_ms"] = ms
            page.fill("#s-q", "")
        out["queries"] = per
        b.close()
    return out


def at_cap(site: Path, work: Path, cap: int) -> Path:
    """A copy of ``site``'s index page whose search files hold its sessions' entries over and over up to
    ``cap`` bytes (the most a report ships): the page's cost at the cap, from an archive below it."""
    from rematch_trace.report.search_site import SHARD_BYTES

    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(site / "assets", work / "assets")
    blobs = []
    for p in sorted((site / "search").glob("*.js")):
        text = p.read_bytes()
        blobs += [json.dumps(e).encode() for e in json.loads(b"[" + text[len(b"rematchSearch(["):-len(b"]);\n")] + b"]")]
    (work / "search").mkdir()
    names: list[str] = []
    shard: list[bytes] = []
    total = size = 0
    while total < cap:
        for b in blobs:
            if size + len(b) > SHARD_BYTES and shard:
                names.append(f"{len(names):04d}.js")
                (work / "search" / names[-1]).write_bytes(b"rematchSearch([" + b",".join(shard) + b"]);\n")
                shard, size = [], 0
            shard.append(b)
            size += len(b)
            total += len(b)
            if total >= cap:
                break
    if shard:
        names.append(f"{len(names):04d}.js")
        (work / "search" / names[-1]).write_bytes(b"rematchSearch([" + b",".join(shard) + b"]);\n")
    page = (site / "index.html").read_text()
    found = re.search(r'(<script type="application/json" id="report-data">)(.*?)(</script>)', page, re.S)
    assert found is not None
    meta = json.loads(found.group(2))
    meta["search"]["files"] = names
    blob = json.dumps(meta).replace("</", "<\\/")
    (work / "index.html").write_text(page[:found.start(2)] + blob + page[found.end(2):])
    return work / "index.html"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=256)
    ap.add_argument("--median-kb", type=int, default=420)
    ap.add_argument("--source", type=Path, default=_DEFAULT_SOURCE)
    ap.add_argument("--work", type=Path, default=HERE / "out" / "report-search")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=32)
    ap.add_argument("--at-cap", action="store_true",
                    help="also measure the page with its search files repeated up to the 48 MB cap")
    a = ap.parse_args()

    corpus, stamp = a.work / "corpus", a.work / "corpus.json"
    wanted = {"size_mb": a.size_mb, "median_kb": a.median_kb, "seed": a.seed, "source": str(a.source.resolve())}
    if not stamp.exists() or json.loads(stamp.read_text()) != wanted:
        shutil.rmtree(a.work, ignore_errors=True)
        corpus.mkdir(parents=True)
        build(corpus, a.work / "next", sessions_of(a.source), a.size_mb, a.median_kb, a.seed)
        stamp.write_text(json.dumps(wanted))
    data = a.work / "data"
    if not (data / "search.sqlite").exists():
        shutil.rmtree(data, ignore_errors=True)
        rematch("import", str(corpus), "--out", str(data), "-j", str(a.jobs))
    size = corpus_size(corpus)
    shutil.rmtree(data / "report", ignore_errors=True)
    report_s = rematch("report", "--data", str(data))
    site = data / "report"
    shipped = tree_bytes(site / "search")
    found = re.search(r'<script type="application/json" id="report-data">(.*?)</script>',
                      (site / "index.html").read_text(), re.S)
    assert found is not None
    meta = json.loads(found.group(1))["search"]

    from rematch_trace.host.loading import load_plugins
    from rematch_trace.report.collect import collect, newest_first
    from rematch_trace.report.prices import load
    from rematch_trace.report.search_site import write_index
    from rematch_trace.store.datafolder import DataDir

    load_plugins()
    dd = DataDir(data)
    entries = collect(dd, {}, load(data)).entries
    newest_first(entries)
    keys = [(e.key, e.stamp) for e in entries]
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        full = write_index(dd, Path(tmp), keys, cap=1 << 62)
        write_s = time.perf_counter() - t
        assert full is not None
        # A refresh: every session's entry taken from the files already written.
        t = time.perf_counter()
        write_index(dd, Path(tmp), keys, cap=1 << 62)
        rewrite_s = time.perf_counter() - t
    sqlite_bytes = sum(p.stat().st_size for p in data.glob("search.sqlite*"))
    out = {
        "transcripts_mb": round(size / 1e6, 1), "sessions": len(keys),
        "report_cold_s": round(report_s, 2), "write_index_s": round(write_s, 2),
        "write_index_refresh_s": round(rewrite_s, 2),
        "shipped_mb": round(shipped / 1e6, 2), "shipped_files": len(meta["files"]),
        "shipped_sessions": f"{meta['sessions']} of {meta['of']}",
        "uncapped_mb": round(full["bytes"] / 1e6, 2), "uncapped_records": full["records"],
        "uncapped_mb_per_gib": round(full["bytes"] / 1e6 * GIB / size, 1),
        "search_sqlite_mb_per_gib": round(sqlite_bytes / 1e6 * GIB / size, 1),
        "browser": browser_search(site / "index.html", "git status"),
    }
    if a.at_cap:
        from rematch_trace.report.search_site import CAP_BYTES

        out["browser_at_cap"] = browser_search(at_cap(site, a.work / "at-cap", CAP_BYTES), "git status")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
