"""``rematch report`` reruns: only changed sessions' pages are rewritten, output is deterministic,
a page that cannot be written is one line and leaves the rest, bad arguments are clear errors."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from hostile_gen import HARNESSES, assert_clean_stderr, make, run_import
from report_gen import rematch


def snapshot(report: Path) -> dict[str, tuple[int, int, bytes]]:
    """Page name -> (inode, mtime_ns, bytes) of every page of a report."""
    out = {}
    for p in [report / "index.html", *sorted((report / "sessions").glob("*.html"))]:
        st = p.stat()
        out[p.relative_to(report).as_posix()] = (st.st_ino, st.st_mtime_ns, p.read_bytes())
    return out


@pytest.fixture
def data(tmp_path: Path) -> dict[str, Any]:
    src, data = tmp_path / "src", tmp_path / "data"
    for h in HARNESSES:
        for n in (1, 2):
            make(src, h, n, turns=3)
    assert run_import(data, src).returncode == 0
    return {"src": src, "data": data, "report": data / "report"}


def report(d: dict[str, Any], *extra: str) -> Any:
    res = rematch("report", "--data", str(d["data"]), *extra)
    assert_clean_stderr(res)
    return res


def test_rerun_rewrites_only_changed_sessions(data: dict[str, Any]) -> None:
    first = report(data)
    assert first.returncode == 0 and "6 session(s): 6 page(s) written, 0 unchanged" in first.stdout
    before = snapshot(data["report"])
    again = report(data)
    assert "0 page(s) written, 6 unchanged, 0 removed; 0 trace(s) read" in again.stdout
    after = snapshot(data["report"])
    assert after == before  # not even rewritten with the same bytes: same inode and mtime
    # One transcript grows: the import continues it, the report rewrites its page alone.
    grown = make(data["src"], "codex", 1, turns=5)
    assert run_import(data["data"], data["src"]).returncode == 0
    third = report(data)
    assert "1 page(s) written, 5 unchanged" in third.stdout and "1 trace(s) read" in third.stdout
    changed = {k for k, v in snapshot(data["report"]).items() if v[:2] != before[k][:2]}
    key = f"sessions/{grown.name.split('-2026-02-10T21-00-00-')[1].removesuffix('.jsonl')}.html"
    assert changed == {"index.html", key}


def test_output_is_deterministic(data: dict[str, Any], tmp_path: Path) -> None:
    report(data)
    other = tmp_path / "elsewhere"
    res = rematch("report", "--data", str(data["data"]), "--out", str(other))
    assert res.returncode == 0, res.stderr
    assert {k: v[2] for k, v in snapshot(data["report"]).items()} == {k: v[2] for k, v in snapshot(other).items()}
    assert (data["report"] / "summaries.json").read_bytes() == (other / "summaries.json").read_bytes()


def test_since_drops_and_restores_pages(data: dict[str, Any]) -> None:
    report(data)
    gone = report(data, "--since", "2099-01-01")
    assert "0 session(s): 0 page(s) written, 0 unchanged, 6 removed" in gone.stdout
    assert list((data["report"] / "sessions").iterdir()) == []
    assert "No sessions since 2099-01-01" in (data["report"] / "index.html").read_text()
    back = report(data, "--since", "2000-01-01")
    assert "6 session(s): 6 page(s) written" in back.stdout and "0 trace(s) read" in back.stdout


def test_changed_templates_or_a_broken_cache_rebuild_everything(data: dict[str, Any]) -> None:
    report(data)
    cache = data["report"] / "summaries.json"
    value = orjson.loads(cache.read_bytes())
    value["build"] = "an older rematch"
    cache.write_bytes(orjson.dumps(value))
    assert "6 page(s) written" in report(data).stdout
    assert "0 trace(s) read" in report(data).stdout
    cache.write_bytes(b"{not json")
    res = report(data)
    assert "6 page(s) written" in res.stdout and "6 trace(s) read" in res.stdout


def test_a_page_that_cannot_be_written_is_one_line(data: dict[str, Any]) -> None:
    report(data)
    pages = sorted((data["report"] / "sessions").glob("*.html"))
    victim = pages[0]
    victim.unlink()
    victim.mkdir()  # a folder where the page goes: the rename over it fails
    (data["report"] / "summaries.json").unlink()
    res = report(data)
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and str(victim) in lines[0] and "page not written" in lines[0]
    assert "5 page(s) written" in res.stdout
    for p in pages[1:]:
        assert p.read_text().endswith("</html>\n")
    assert not [p for p in data["report"].rglob("*") if p.name.endswith((".tmp", ".trash"))]


def test_clear_errors(tmp_path: Path, data: dict[str, Any]) -> None:
    empty = rematch("report", "--data", str(tmp_path / "nothing"))
    assert empty.returncode == 1 and "nothing imported" in empty.stderr
    assert not (tmp_path / "nothing" / "report").exists()
    bad = rematch("report", "--data", str(data["data"]), "--since", "yesterday")
    assert bad.returncode == 2 and "not a date" in bad.stderr
    target = tmp_path / "target"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target, target_is_directory=True)
    res = rematch("report", "--data", str(data["data"]), "--out", str(link))
    assert res.returncode == 1 and "symbolic link" in res.stderr
    assert list(target.iterdir()) == []
    # A folder of other files is not a report folder: nothing in it is touched.
    (target / "index.html").write_text("mine")
    res = rematch("report", "--data", str(data["data"]), "--out", str(target))
    assert res.returncode == 1 and "holds no rematch report" in res.stderr
    assert [p.name for p in target.iterdir()] == ["index.html"] and (target / "index.html").read_text() == "mine"


def test_report_files_are_private(data: dict[str, Any]) -> None:
    report(data)
    for p in [data["report"], *data["report"].rglob("*")]:
        mode = p.stat().st_mode & 0o777
        assert mode & 0o077 == 0, f"{p}: {oct(mode)}"
    assert os.access(data["report"] / "index.html", os.R_OK)


def test_a_refreshed_index_is_the_index_a_fresh_build_makes(data: dict[str, Any], tmp_path: Path) -> None:
    """The index of a refresh joins the kept rows of unchanged sessions with the new rows of changed ones,
    and adds up cached summaries: byte for byte what a build from nothing makes of the same data."""
    report(data)
    make(data["src"], "claude_code", 1, turns=6)  # one session grows
    make(data["src"], "omp", 7, turns=2)  # one is new
    assert run_import(data["data"], data["src"]).returncode == 0
    res = report(data)
    assert "7 session(s): 2 page(s) written, 5 unchanged" in res.stdout and "2 trace(s) read" in res.stdout
    fresh = tmp_path / "fresh"
    assert rematch("report", "--data", str(data["data"]), "--out", str(fresh)).returncode == 0
    assert (data["report"] / "index.html").read_bytes() == (fresh / "index.html").read_bytes()
    assert (data["report"] / "summaries.json").read_bytes() == (fresh / "summaries.json").read_bytes()


@pytest.mark.parametrize("damage", ["usage", "cost", "daily", "row"])
def test_a_damaged_cache_entry_is_recomputed_not_a_crash(data: dict[str, Any], damage: str) -> None:
    report(data)
    before = (data["report"] / "index.html").read_bytes()
    cache = data["report"] / "summaries.json"
    value = orjson.loads(cache.read_bytes())
    key = sorted(value["sessions"])[0]
    entry = value["sessions"][key]
    if damage == "usage":
        del entry["summary"]["usage"]
    elif damage == "cost":
        entry["summary"]["usage"][0]["cost"] = "a lot"
    elif damage == "daily":
        entry["summary"]["daily"] = [{"day": "2026-02-10"}]
    else:
        entry["row"] = 42
    value["index"] = "changed"  # the index is made again, from the damaged cache
    cache.write_bytes(orjson.dumps(value))
    res = report(data)
    assert res.returncode == 0 and res.stderr == ""
    assert (data["report"] / "index.html").read_bytes() == before
    assert ("1 trace(s) read" if damage != "row" else "0 trace(s) read") in res.stdout
    stats = rematch("stats", "--out", str(data["data"]), "--json")
    assert stats.returncode == 0 and orjson.loads(stats.stdout)["total"]["sessions"] == 6
