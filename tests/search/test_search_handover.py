"""The import hands the search index the rows of what its workers read (issue 32): during ``rematch import``
each source transcript is read through its plugin once, and the index is the one the source pass makes
reading every transcript again; a continued import hands over only the new records."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from test_search import CORPUS_FILES, _grow_claude, cli_env

#: ``rematch import`` in a process whose plugins' ``read_transcript`` readers (the Claude Code, Codex and
#: omp plugins' own) log each reading, ``path start``, to the file ``argv[1]`` (appended: forked workers too).
_COUNTED_IMPORT = """
import os, sys
import rematch_claude_code.reader, rematch_codex.discover, rematch_omp.tree
log = sys.argv.pop(1)

def counted(read):
    def wrapper(source, start):
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.write(fd, f"{source.path} {start}\\n".encode())
        os.close(fd)
        return read(source, start)
    return wrapper

for mod in (rematch_claude_code.reader, rematch_codex.discover, rematch_omp.tree):
    mod.read = counted(mod.read)
sys.argv[0] = "rematch"
from rematch_trace.cli import main
main()
"""

#: Syncs a data folder's index from nothing (every trace, then every source read by the source pass).
_REBUILD = """
import sys
from pathlib import Path
from rematch_trace.host.loading import load_plugins
from rematch_trace.importing import search_sources  # the sync's reader of sources
from rematch_trace.store.datafolder import DataDir
from rematch_trace.store.search_index import SearchIndex, index_path
load_plugins()
data = DataDir(Path(sys.argv[1]))
with SearchIndex(index_path(data)) as index:
    index.sync(data)
"""


def counted_import(src: Path, data: Path, log: Path, *extra: str) -> list[tuple[str, int]]:
    """Import ``src`` into ``data`` (no file failed), and return each plugin reading of a transcript."""
    log.unlink(missing_ok=True)
    res = subprocess.run([sys.executable, "-c", _COUNTED_IMPORT, str(log), "import", str(src), "--data", str(data),
                          "-q", *extra], capture_output=True, text=True, env=cli_env(), timeout=300)
    # The corpus's hostile omp file has lines skipped: exit 1, with every file imported.
    assert res.returncode in (0, 1) and ", 0 failed" in res.stdout, res.stdout + res.stderr
    reads = []
    for line in log.read_text().splitlines():
        path, _, start = line.rpartition(" ")
        reads.append((path, int(start)))
    return reads


def index_rows(data: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the index that a search reads or a sync continues from."""
    with sqlite3.connect(data / "search.sqlite") as db:
        return {
            "text": db.execute("SELECT s.id, s.key, s.off, s.len, s.digest, s.src, x.kind, x.seq, x.t, x.body "
                               "FROM spans s JOIN text x ON x.rowid = s.id ORDER BY s.id").fetchall(),
            "sources": db.execute("SELECT path, size, mtime_ns, end_off, streams FROM sources ORDER BY path").fetchall(),
            "traces": db.execute("SELECT key, end_off, started, session_id FROM traces ORDER BY key").fetchall(),
        }


def rebuilt(data: Path, copy: Path) -> dict[str, list[tuple[object, ...]]]:
    """The index of ``data`` made anew on a copy by the source pass (each transcript read again)."""
    shutil.copytree(data, copy, symlinks=True)
    for p in copy.glob("search.sqlite*"):
        p.unlink()
    res = subprocess.run([sys.executable, "-c", _REBUILD, str(copy)], capture_output=True, text=True,
                         env=cli_env(), timeout=300)
    assert res.returncode == 0, res.stderr
    return index_rows(copy)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_an_import_reads_each_transcript_once_and_indexes_what_the_source_pass_would(
        jobs: str, corpus_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    reads = counted_import(corpus_dir, data, tmp_path / "reads.log", "--jobs", jobs)
    harnesses = {h for h in ("claude_code", "codex", "omp") if any(f"/corpus/{h}/" in p for p, _ in reads)}
    assert harnesses == {"claude_code", "codex", "omp"}
    # Each source read once (the import's workers), none a second time by the index's source pass.
    twice = sorted({p for p in {p for p, _ in reads} if sum(1 for q, _ in reads if q == p) > 1})
    assert twice == []
    rows = index_rows(data)
    with sqlite3.connect(data / "search.sqlite") as db:
        kinds = {k for (k,) in db.execute("SELECT DISTINCT kind FROM text")}
    assert {"output", "assistant"} <= kinds and len(rows["sources"]) >= 15
    assert rows == rebuilt(data, tmp_path / "rebuilt")  # the same rows, ids, bodies, offsets and sources


def test_a_continued_import_hands_over_only_the_new_records(corpus_dir: Path, tmp_path: Path) -> None:
    rel = CORPUS_FILES["claude_code"]
    src = tmp_path / "src"
    copy = src / rel
    copy.parent.mkdir(parents=True)
    shutil.copyfile(corpus_dir / rel, copy)
    data, log = tmp_path / "data", tmp_path / "reads.log"
    assert counted_import(src, data, log) == [(str(copy), 0)]
    size = copy.stat().st_size
    _grow_claude(copy, "flibbertigibbet")
    # Read on once from where the last import stopped: the index took the import's rows of the new records.
    # (The Claude Code translator reads the few lines it held back at the end itself, before that point.)
    reads = counted_import(src, data, log)
    assert reads.count((str(copy), size)) == 1 and all(p == str(copy) and 0 < at <= size for p, at in reads)
    with sqlite3.connect(data / "search.sqlite") as db:
        [(end,)] = db.execute("SELECT end_off FROM sources").fetchall()
    assert end == copy.stat().st_size
    # What a sync reading the whole file anew indexes (its rows in another order: by id, the continued
    # index has the first import's traces and sources, then the second's).
    got, anew = index_rows(data), rebuilt(data, tmp_path / "rebuilt")
    assert got["sources"] == anew["sources"] and got["traces"] == anew["traces"]
    assert sorted(r[1:] for r in got["text"]) == sorted(r[1:] for r in anew["text"])


def test_a_file_too_large_to_hold_is_read_by_the_source_pass_as_before(
        corpus_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A worker holds at most KEEP_RECORDS_BYTES of a file's rows: past them it hands nothing over, and
    # the index's source pass reads that file itself (a second reading), with the same index.
    import rematch_claude_code
    import rematch_claude_code.reader as reader
    from rematch_trace.importing import search_sources, source_import
    from rematch_trace.importing.batch import run_import
    from rematch_trace.importing.settings import ImportSettings
    from rematch_trace.importing.worker import use_host
    from rematch_trace.store.datafolder import DataDir
    from rematch_trace.testing import make_host

    rel = CORPUS_FILES["claude_code"]
    src = tmp_path / "src"
    copy = src / rel
    copy.parent.mkdir(parents=True)
    shutil.copyfile(corpus_dir / rel, copy)
    reads: list[int] = []
    real = reader.read
    monkeypatch.setattr(reader, "read", lambda source, start: (reads.append(start), real(source, start))[1])
    # (the bound counts the trace rows' bytes and the conversation rows' characters, not the records')
    monkeypatch.setattr(source_import, "KEEP_RECORDS_BYTES", 1000)
    monkeypatch.setattr(search_sources, "_HOST", [])  # the pass's host: this test's
    data = tmp_path / "data"
    try:
        summary = run_import([src], DataDir(data), ImportSettings(jobs=1), host=make_host([rematch_claude_code]))
    finally:
        use_host(None)
    assert [f.outcome for f in summary.files] == ["imported"]
    assert reads == [0, 0]  # the import's reading, then the source pass's
    with sqlite3.connect(data / "search.sqlite") as db:
        assert db.execute("SELECT count(*) FROM text WHERE kind = 'output'").fetchone()[0] > 0
    assert index_rows(data) == rebuilt(data, tmp_path / "rebuilt")
