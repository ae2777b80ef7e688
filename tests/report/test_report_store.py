"""Issue 40: the report reads what the import stored, never a transcript; its pages are the same whatever
the number of jobs; a data folder from before the stored conversations says so and still shows them."""

from __future__ import annotations

import uuid
from pathlib import Path

from page_check import page_text
from report_gen import rematch, run

CC = (Path(__file__).resolve().parents[2] / "examples" / "transcripts" / "claude_code" / "projects" / "-home-dev-webapp"
      / "5b1f0c3e-8a7d-4e52-9b61-2f0d7c4a9e11.jsonl")
#: A line of a call's output in the example session.
OUTPUT = "Tests  87 passed (87)"
LONG = "\n".join(f"line {i} of a long output" for i in range(300))


def _sessions(folder: Path, n: int) -> list[str]:
    """``n`` copies of the example Claude Code session, each its own id, the test run's output made long."""
    folder.mkdir(parents=True)
    ids = [str(uuid.UUID(int=i + 1)) for i in range(n)]
    text = CC.read_text().replace("Test Files  12 passed (12)", "Test Files  12 passed (12)\\n" + LONG.replace("\n", "\\n"))
    for sid in ids:
        (folder / f"{sid}.jsonl").write_text(text.replace(CC.stem, sid))
    return ids


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_site_is_the_same_whatever_the_jobs_and_reads_no_transcript(tmp_path: Path) -> None:
    src, data = tmp_path / "src", tmp_path / "data"
    ids = _sessions(src, 20)  # more than the pages rendered in one process (build.POOL_MIN)
    run("import", str(src), "--data", str(data), "-q")
    # The transcripts are gone: the pages are made of what the import stored.
    for p in src.iterdir():
        p.unlink()
    one, two = tmp_path / "one", tmp_path / "two"
    run("report", "--data", str(data), "--out", str(one), "--jobs", "1")
    res = run("report", "--data", str(data), "--out", str(two), "--jobs", "2")
    assert "20 page(s) written" in res.stdout and "transcript" not in res.stderr
    assert _files(one) == _files(two)
    page = page_text(one / "sessions" / f"{ids[0]}.html")
    assert OUTPUT in page and "line 299 of a long output" in page and "as the import stored them" in page
    # The long output is in the page's folder, not in the page.
    assert "line 299 of a long output" not in (one / "sessions" / f"{ids[0]}.html").read_text()
    shown = rematch("show", ids[0], "--data", str(data), "--conversation", "--full")
    assert shown.returncode == 0 and OUTPUT in shown.stdout and "NOTE" not in shown.stdout


def test_a_data_folder_without_stored_conversations_says_so_and_reads_the_transcripts(tmp_path: Path) -> None:
    src, data = tmp_path / "src", tmp_path / "data"
    [sid] = _sessions(src, 1)
    run("import", str(src), "--data", str(data), "-q")
    for p in (data / "conversations").iterdir():  # as a data folder of an earlier rematch has none
        p.unlink()
    res = rematch("report", "--data", str(data))
    assert res.returncode == 0
    said = [line for line in res.stderr.splitlines() if "read their transcript again" in line]
    assert len(said) == 1 and said[0].startswith("rematch: 1 session page(s)")
    page = page_text(data / "report" / "sessions" / f"{sid}.html")
    assert OUTPUT in page and "from the source transcript" in page and "the import stored no conversation" in page
    shown = rematch("show", sid, "--data", str(data), "--conversation", "--full")
    assert OUTPUT in shown.stdout and "NOTE: the import stored no conversation" in shown.stdout
    # A new import of the same folder stores them: the next report reads no transcript.
    fresh = tmp_path / "fresh"
    run("import", str(src), "--data", str(fresh), "-q")
    assert "transcript" not in run("report", "--data", str(fresh)).stderr
