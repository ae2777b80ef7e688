"""Sources at fsspec URLs: read through the core exactly as local files are.

``memory://`` stands for an object store (it lives in one process, so these
runs are in-process, or in forked local workers that inherit it); ``file://``
runs through the real ``rematch`` process. The data folder must be local: a
URL for it is refused in one line.
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostile_gen import HARNESSES, cli_env, dump, lines_for, path_for, report, run_import, sid_for, write

import rematch_claude_code
import rematch_codex
import rematch_omp
from rematch_trace.host.fs import local_path, open_raw, stat_of, url_of
from rematch_trace.importing.batch import ImportSettings
from rematch_trace.importing.batch import run_import as run_in_process
from rematch_trace.importing.worker import use_host
from rematch_trace.store.datafolder import DataDir
from rematch_trace.testing import make_host

fsspec = pytest.importorskip("fsspec")


def outputs(out: Path) -> dict[str, bytes]:
    """Every output file of a data folder, by relative path."""
    return {
        str(p.relative_to(out)): p.read_bytes()
        for folder in ("traces", "events", "pending") if (out / folder).is_dir()
        for p in sorted((out / folder).iterdir())
    }


@pytest.fixture
def host() -> Iterator[None]:
    use_host(make_host([rematch_claude_code, rematch_codex, rematch_omp]))
    yield
    use_host(None)


@pytest.fixture
def bucket(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The same small archive in ``memory://`` and on disk, one file gzipped, one to grow."""
    memfs = fsspec.filesystem("memory")
    name = f"rematch-test-{os.getpid()}-{tmp_path.name}"
    local = tmp_path / "local"
    for h in HARNESSES:
        for n in range(1, 4):
            sid = sid_for(h, n)
            write(path_for(local, h, sid), lines_for(h, sid, turns=12))
    cc = path_for(local, "claude_code", sid_for("claude_code", 2))
    gz = cc.with_name(cc.name + ".gz")
    gz.write_bytes(gzip.compress(cc.read_bytes(), mtime=0))
    cc.unlink()
    for p in sorted(local.rglob("*")):
        if p.is_file():
            memfs.pipe_file(f"/{name}/{p.relative_to(local).as_posix()}", p.read_bytes())
    yield f"memory://{name}", local
    memfs.rm(f"/{name}", recursive=True)


def test_a_memory_archive_imports_as_its_local_copy(tmp_path: Path, host: None, bucket: tuple[str, Path]) -> None:
    url, local = bucket
    settings = ImportSettings(jobs=1)
    on_disk = run_in_process([local], DataDir(tmp_path / "from_disk"), settings)
    remote = run_in_process([url], DataDir(tmp_path / "from_url"), settings)
    assert remote.count("imported") == on_disk.count("imported") == 9
    assert remote.count("failed") == 0 and not remote.failed
    assert outputs(tmp_path / "from_url") == outputs(tmp_path / "from_disk")
    # The ledger names the files by URL; the forked local pool reads them the same way.
    assert all(f.path.startswith(url + "/") for f in remote.files)
    pooled = run_in_process([url], DataDir(tmp_path / "pooled"), ImportSettings(jobs=2))
    assert pooled.count("imported") == 9 and outputs(tmp_path / "pooled") == outputs(tmp_path / "from_disk")


def test_a_grown_object_is_continued_and_an_unchanged_one_skipped(
    tmp_path: Path, host: None, bucket: tuple[str, Path]
) -> None:
    url, _local = bucket
    memfs = fsspec.filesystem("memory")
    sid = sid_for("codex", 1)
    full = lines_for("codex", sid, turns=24)
    half = b"".join(dump(x) for x in full[: len(full) // 2])
    inner = url.removeprefix("memory:/") + "/" + path_for(Path("."), "codex", sid).as_posix()
    memfs.pipe_file(inner, half)
    out = DataDir(tmp_path / "out")
    first = run_in_process([url], out, ImportSettings(jobs=1))
    assert first.count("imported") == 9
    memfs.pipe_file(inner, half + b"".join(dump(x) for x in full[len(full) // 2:]))
    again = run_in_process([url], out, ImportSettings(jobs=1))
    assert (again.count("resumed"), again.count("unchanged"), again.count("imported")) == (1, 8, 0)
    # What a fresh import of the grown object writes.
    fresh = DataDir(tmp_path / "fresh")
    run_in_process([url], fresh, ImportSettings(jobs=1))
    assert outputs(out.root) == outputs(fresh.root)


def test_a_missing_url_and_an_unknown_scheme_are_said(tmp_path: Path, host: None) -> None:
    from rematch_trace.errors import RematchError

    with pytest.raises(RematchError, match="no such file or folder"):
        run_in_process(["memory://no-such-bucket/x"], DataDir(tmp_path / "out"), ImportSettings())
    with pytest.raises(RematchError, match="nosuchproto"):
        run_in_process(["nosuchproto://b/x.jsonl"], DataDir(tmp_path / "out2"), ImportSettings())


def test_url_paths_survive_a_path_round_trip() -> None:
    # A Source carries a Path, which folds "//": the core gets the URL back.
    assert url_of(Path("s3://bucket/a/b.jsonl")) == "s3://bucket/a/b.jsonl"
    assert url_of("memory://b/x.jsonl") == "memory://b/x.jsonl"
    assert url_of("/abs/local/x.jsonl") is None and url_of(Path("/abs/s3:/x")) is None
    assert url_of("file:///tmp/x.jsonl") is None
    assert local_path("file:///tmp/a%20b.jsonl") == "/tmp/a b.jsonl"


def test_open_raw_reads_and_seeks_a_memory_object() -> None:
    memfs = fsspec.filesystem("memory")
    memfs.pipe_file(f"/rematch-raw-{os.getpid()}/x.jsonl", b'{"a":1}\n{"b":2}\n')
    url = f"memory://rematch-raw-{os.getpid()}/x.jsonl"
    try:
        with open_raw(Path(url)) as f:
            f.seek(8)
            assert f.peek(1)[:1] == b"{" and f.readline() == b'{"b":2}\n'
        size, mtime_ns, regular = stat_of(url)
        assert (size, regular) == (16, True) and mtime_ns > 0
    finally:
        memfs.rm(f"/rematch-raw-{os.getpid()}", recursive=True)


def test_file_urls_through_the_cli(tmp_path: Path) -> None:
    src = tmp_path / "src"
    for h in HARNESSES:
        write(path_for(src, h, sid_for(h, 1)), lines_for(h, sid_for(h, 1), turns=6))
    by_path = run_import(tmp_path / "by_path", src)
    argv = [sys.executable, "-m", "rematch_trace.cli", "import", src.as_uri(), "--out", (tmp_path / "by_url").as_uri(),
            "--json"]
    by_url = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=cli_env())
    assert by_path.returncode == by_url.returncode == 0, by_url.stderr
    assert outputs(tmp_path / "by_url") == outputs(tmp_path / "by_path")
    assert report(by_url)["data"] == str(tmp_path / "by_url")


@pytest.mark.parametrize("out", ["memory://rematch-data", "s3://bucket/rematch"])
def test_a_data_folder_url_is_refused_in_one_line(tmp_path: Path, out: str) -> None:
    src = tmp_path / "src"
    write(path_for(src, "codex", sid_for("codex", 1)), lines_for("codex", sid_for("codex", 1)))
    argv = [sys.executable, "-m", "rematch_trace.cli", "import", str(src), "--out", out]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=cli_env(), cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "must be on a local or shared POSIX file system" in lines[0], proc.stderr
    # Nothing was made anywhere, the folder a naive Path() would fold the URL into included.
    assert sorted(os.listdir(tmp_path)) == ["src"]
    shutil.rmtree(src)


def test_a_problem_in_an_object_names_its_url(tmp_path: Path, host: None) -> None:
    memfs = fsspec.filesystem("memory")
    sid = sid_for("codex", 7)
    inner = f"/rematch-bad-{os.getpid()}/" + path_for(Path("."), "codex", sid).as_posix()
    lines = lines_for("codex", sid, turns=3)
    memfs.pipe_file(inner, b"".join(dump(x) for x in lines[:2]) + b"{not json\n" + b"".join(dump(x) for x in lines[2:]))
    url = f"memory:/{inner}"
    try:
        summary = run_in_process([f"memory://rematch-bad-{os.getpid()}"], DataDir(tmp_path / "out"), ImportSettings())
    finally:
        memfs.rm(f"/rematch-bad-{os.getpid()}", recursive=True)
    [result] = summary.files
    assert result.path == url and result.outcome == "imported"
    assert result.problems and all(p.startswith(f"{url}:3: ") for p in result.problems), result.problems
