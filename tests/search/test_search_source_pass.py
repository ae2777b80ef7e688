"""The source pass's work (issue 32's cost): read and redacted in the import's ``--jobs`` workers with the
same index as one process, and no FTS5 delete between its inserts (each one flushes FTS5's pending terms)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import orjson
from test_search import cli_env, rematch

from rematch_trace.importing.search_sources import POOL_MIN


def imported(src: Path, data: Path, *extra: str) -> None:
    """Import the corpus (whose hostile omp file has lines skipped: exit 1) with no file failed."""
    res = rematch("import", str(src), "--data", str(data), "-q", *extra)
    assert res.returncode in (0, 1) and ", 0 failed" in res.stdout, res.stdout + res.stderr


def _source_rows(data: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(data / "search.sqlite") as db:
        return db.execute("SELECT s.id, s.key, x.kind, x.seq, x.t, x.body FROM spans s JOIN text x ON x.rowid = s.id "
                          "ORDER BY s.id").fetchall()


def test_an_import_with_two_jobs_indexes_the_sources_as_one_process_does(corpus_dir: Path, tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    imported(corpus_dir, one, "--jobs", "1")
    imported(corpus_dir, two, "--jobs", "2")
    with sqlite3.connect(two / "search.sqlite") as db:
        sources = db.execute("SELECT count(*) FROM sources").fetchone()[0]
        outputs = db.execute("SELECT count(*) FROM text WHERE kind = 'output'").fetchone()[0]
    assert sources >= POOL_MIN  # enough for the workers to be used
    assert outputs > 0
    rows = _source_rows(one)
    assert rows and _source_rows(two) == rows  # the same rows, ids and order


#: Syncs a data folder's new index in a process of its own, printing each SQL statement's first words.
_TRACED_SYNC = """
import sys, orjson
from pathlib import Path
from rematch_trace.host.loading import load_plugins
from rematch_trace.importing import search_sources  # the sync's reader of sources
from rematch_trace.store.datafolder import DataDir
from rematch_trace.store.search_index import SearchIndex, index_path
load_plugins()
data = DataDir(Path(sys.argv[1]))
seen = []
with SearchIndex(index_path(data)) as index:
    index.db.set_trace_callback(lambda s: seen.append(" ".join(s.split()[:3]).upper()))
    index.sync(data)
sys.stdout.write(orjson.dumps(seen).decode())
"""


def test_a_first_source_pass_makes_no_fts5_delete_between_its_inserts(corpus_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    imported(corpus_dir, data, "--jobs", "1")
    expected = _source_rows(data)
    for p in data.glob("search.sqlite*"):
        p.unlink()
    res = subprocess.run([sys.executable, "-c", _TRACED_SYNC, str(data)], capture_output=True, text=True,
                         env=cli_env(), timeout=120)
    assert res.returncode == 0, res.stderr
    statements = orjson.loads(res.stdout)
    inserts = [i for i, s in enumerate(statements) if s == "INSERT INTO TEXT"]
    deletes = [i for i, s in enumerate(statements) if s == "DELETE FROM TEXT"]
    assert inserts
    # The trace's assistant heads that the source's text replaces go, in one run after the last insert.
    assert all(d > inserts[-1] for d in deletes), (len(deletes), [d for d in deletes if d < inserts[-1]][:5])
    assert _source_rows(data) == expected  # and the index is the one the import made
