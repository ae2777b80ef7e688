"""Nothing lost: SIGKILL ``rematch import`` at random moments, and run two at once.

After every kill the data folder must be consistent: every trace a complete
trace (the old one or the new one, never half of either), the ledger opening
and agreeing with the files, and the next run finishing the work so that the
final outputs are byte-identical to a clean import.
"""

from __future__ import annotations

import fcntl
import os
import random
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import kills as killing
import orjson
from hostile_gen import (
    HARNESSES,
    assert_clean_stderr,
    cli_env,
    dump,
    import_cmd,
    lines_for,
    path_for,
    report,
    run_import,
    sid_for,
    traces,
)

from rematch_trace.importing.batch import settle
from rematch_trace.store.datafolder import DataDir

SEED = 8
KILLS = 54
FILES_PER_HARNESS = 3
TURNS = 120
#: Each transcript grows through these fractions of its lines (a harness still writing).
VERSIONS = (0.5, 0.7, 0.85, 1.0)


def build_corpus(root: Path, turns: int = TURNS) -> dict[Path, list[bytes]]:
    """Transcripts of the three harnesses: path -> their encoded lines."""
    corpus: dict[Path, list[bytes]] = {}
    for h in HARNESSES:
        for n in range(1, FILES_PER_HARNESS + 1):
            sid = sid_for(h, n)
            p = path_for(root, h, sid)
            p.parent.mkdir(parents=True, exist_ok=True)
            corpus[p] = [dump(x) for x in lines_for(h, sid, turns=turns + n)]
    return corpus


def version_bytes(lines: list[bytes], v: int) -> bytes:
    """The file's content at version ``v``."""
    return b"".join(lines[: int(len(lines) * VERSIONS[v])])


def write_version(corpus: dict[Path, list[bytes]], root: Path, src: Path, v: int) -> None:
    """Bring every file under ``root`` to version ``v`` by appending (as a harness does)."""
    for p, lines in corpus.items():
        target = root / p.relative_to(src)
        want = version_bytes(lines, v)
        have = target.stat().st_size if target.exists() else 0
        with open(target, "ab") as f:
            f.write(want[have:])


def reference(src: Path, out: Path) -> dict[str, bytes]:
    """The traces a clean, uninterrupted import writes."""
    proc = run_import(out, src)
    assert proc.returncode == 0, proc.stderr
    return traces(out)


def check_trace(name: str, body: bytes) -> None:
    """A complete trace: every line parses, starts and ends right, seqs contiguous."""
    assert body.endswith(b"\n"), f"{name}: half-written (no final newline)"
    recs = [orjson.loads(x) for x in body.splitlines()]
    assert recs[0]["ev"] == "session_start", name
    assert recs[-1]["ev"] == "session_shutdown", name
    assert [r["seq"] for r in recs] == list(range(len(recs))), f"{name}: seqs not contiguous"


def check_consistent(out: Path, src_sizes: dict[str, int], refs: dict[int, dict[str, bytes]]) -> None:
    """The data folder after a kill (see the module docstring).

    ``refs`` maps a corpus version (0: first part, 1: grown) to its clean traces;
    ``src_sizes`` maps each source path to its size in each version, keyed
    ``f"{path}@{version}"``.
    """
    if not out.exists():
        return
    # A resume continues its outputs in place; any rematch command first rolls
    # back one that a kill left half-done (rematch_trace.store.journal). So does this.
    settle(DataDir(out))
    found = traces(out)
    for name, body in found.items():
        check_trace(name, body)
        assert any(refs[v].get(name) == body for v in refs), f"{name}: neither the old nor the new complete trace"
    for folder in ("traces", "events", "pending"):
        d = out / folder
        if d.is_dir():
            for p in d.iterdir():
                assert p.stat().st_mode & 0o077 == 0, f"{p} is not private"
    ledger = out / "ledger.sqlite"
    if not ledger.exists():
        return
    db = sqlite3.connect(ledger, timeout=10)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "sessions" not in tables:
            return  # killed before the schema was created
        sources = {r[0]: (r[1], r[2]) for r in db.execute("SELECT path, outcome, size FROM sources")}
        for sid, tpath, spath in db.execute("SELECT session_id, trace_path, source_path FROM sessions"):
            f = out / tpath
            assert f.is_file(), f"ledger row {sid} has no trace file {tpath}"
            outcome, size = sources[spath]
            if outcome in ("imported", "resumed"):
                version = next((v for v in refs if src_sizes.get(f"{spath}@{v}") == size), None)
                assert version is not None, f"{spath}: recorded size {size} is no version of the file"
                # The row's trace may already be newer (the kill came between the rename and
                # the ledger commit), but never older than the row says.
                body = f.read_bytes()
                newer = [v for v in refs if v >= version]
                assert any(refs[v].get(f.name) == body for v in newer), f"{tpath} disagrees with its ledger row"
    finally:
        db.close()


def kill_after(cmd: list[str], delay: float) -> int | None:
    """:func:`kills.kill_after` in the three plugins' environment."""
    return killing.kill_after(cmd, delay, cli_env())


def test_kill_at_random_points(tmp_path: Path) -> None:
    rnd = random.Random(SEED)
    src = tmp_path / "src"
    corpus = build_corpus(src)
    sizes = {f"{p}@{v}": len(version_bytes(lines, v)) for p, lines in corpus.items() for v in range(len(VERSIONS))}
    # Each version's clean traces, from a scratch copy (traces hold no source path, so they compare).
    refs: dict[int, dict[str, bytes]] = {}
    scratch = tmp_path / "scratch"
    for v in range(len(VERSIONS)):
        for p in corpus:
            (scratch / p.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
        write_version(corpus, scratch, src, v)
        started = time.monotonic()
        refs[v] = reference(scratch, tmp_path / f"ref{v}")
        full_run = time.monotonic() - started
        shutil.rmtree(tmp_path / f"ref{v}")
    shutil.rmtree(scratch)

    kills = 0
    out = tmp_path / "data"
    version = 0
    write_version(corpus, src, src, version)
    per_version = -(-KILLS // len(VERSIONS))
    i = 0
    while kills < KILLS:
        i += 1
        assert i < 3 * KILLS, f"only {kills} kills landed in {i} runs"
        if i % 13 == 0 and out.exists():
            shutil.rmtree(out)  # now and then: kills during a first import
        elif i > 1:
            # Same bytes, new mtime: the next run re-imports everything, so there is work to kill.
            for p in corpus:
                os.utime(p, ns=(time.time_ns(), time.time_ns() + i))
        jobs = 2 if i % 3 == 2 else 1
        began = time.monotonic()
        rc = kill_after(import_cmd(out, src, jobs=jobs), rnd.uniform(0.3, 1.0) * full_run)
        if rc is None:
            kills += 1
        else:
            assert rc == 0
            # A run that finished before its kill says the machine is faster now than when the
            # window was measured (a loaded machine then): aim the next kills inside this run's time.
            full_run = min(full_run, time.monotonic() - began)
        check_consistent(out, sizes, refs)
        if rc is None and kills % per_version == 0:
            # The run after the kills finishes the work: exactly the clean import's outputs.
            proc = run_import(out, src)
            assert_clean_stderr(proc)
            assert proc.returncode == 0, proc.stderr
            assert traces(out) == refs[version]
            if version + 1 < len(VERSIONS):
                version += 1
                write_version(corpus, src, src, version)  # grown: the next run resumes
                rc = kill_after(import_cmd(out, src), rnd.uniform(0.3, 1.0) * full_run)
                kills += rc is None
                check_consistent(out, sizes, refs)
    proc = run_import(out, src)
    assert proc.returncode == 0, proc.stderr
    assert traces(out) == refs[len(VERSIONS) - 1]
    again = report(run_import(out, src))
    assert again["files"]["unchanged"] == len(corpus)


def test_kill_during_resumes(tmp_path: Path) -> None:
    """Kills that land while grown transcripts are continued in place, under the journal."""
    rnd = random.Random(SEED + 1)
    src = tmp_path / "src"
    corpus = build_corpus(src, turns=4 * TURNS)  # longer: the resumes have time to be killed
    first, grown = 0, len(VERSIONS) - 1
    sizes = {f"{p}@{v}": len(version_bytes(lines, v)) for p, lines in corpus.items() for v in (first, grown)}
    refs: dict[int, dict[str, bytes]] = {}
    for v in (first, grown):
        scratch = tmp_path / f"scratch{v}"
        for p in corpus:
            (scratch / p.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
        write_version(corpus, scratch, src, v)
        refs[v] = reference(scratch, tmp_path / f"ref{v}")
    write_version(corpus, src, src, first)
    base = tmp_path / "base"
    assert run_import(base, src).returncode == 0
    write_version(corpus, src, src, grown)
    out = tmp_path / "data"
    shutil.copytree(base, out)
    started = time.monotonic()
    proc = run_import(out, src)
    resume_run = time.monotonic() - started
    assert report(proc)["files"]["resumed"] == len(corpus)
    assert traces(out) == refs[grown]
    # At least 14 runs and 7 kills that landed: on a loaded machine a run can end
    # before its kill, so keep going (as the test above does) up to a bound.
    schedule = killing.KillSchedule(runs=14, landed=7, bound=42)
    for scale in schedule:
        shutil.rmtree(out)
        shutil.copytree(base, out)
        rc = kill_after(import_cmd(out, src, jobs=rnd.choice((1, 2))), rnd.uniform(0.4, 1.0) * resume_run * scale)
        schedule.ended(rc is None)
        check_consistent(out, sizes, refs)
        proc = run_import(out, src)
        assert_clean_stderr(proc)
        assert proc.returncode == 0, proc.stderr
        assert traces(out) == refs[grown]


def hold_lock(out: Path) -> int:
    """Take the data folder's import lock as a running import would; return the fd."""
    out.mkdir(parents=True, exist_ok=True)
    fd = os.open(out / "import.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.ftruncate(fd, 0)
    os.write(fd, b"424242")
    return fd


def test_second_import_on_a_locked_folder_fails_clearly(tmp_path: Path) -> None:
    src = tmp_path / "src"
    for h in HARNESSES:
        p = path_for(src, h, sid_for(h))
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"".join(dump(x) for x in lines_for(h)))
    out = tmp_path / "data"
    first = run_import(out, src)
    assert first.returncode == 0
    before = traces(out)
    fd = hold_lock(out)
    try:
        proc = run_import(out, src)
    finally:
        os.close(fd)
    assert proc.returncode == 2  # fatal: the README's exit statuses
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "another rematch import is running" in lines[0]
    assert str(out / "import.lock") in lines[0] and "424242" in lines[0]
    assert traces(out) == before


def start_a_long_import(tmp_path: Path) -> tuple[Path, Path, dict[str, bytes], subprocess.Popen[str], list[Path]]:
    """Nine sessions that take over a second to import, their reference traces, and an import of
    them into ``tmp_path/data`` started and holding the lock: (src, out, reference, process, files)."""
    src = tmp_path / "src"
    big: list[Path] = []
    for h in HARNESSES:
        for n in range(1, 4):
            p = path_for(src, h, sid_for(h, n))
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(b"".join(dump(x) for x in lines_for(h, sid_for(h, n), turns=400)))
            big.append(p)
    ref = reference(src, tmp_path / "ref")
    out = tmp_path / "data"
    a = subprocess.Popen(import_cmd(out, src), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=cli_env(),
                         text=True)
    lock = out / "import.lock"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if lock.exists() and lock.stat().st_size > 0:
            break
        time.sleep(0.005)
    return src, out, ref, a, big


def test_two_imports_at_once(tmp_path: Path) -> None:
    """A real pair of runs on one folder: one waits out, nothing is corrupted."""
    # The second starts once the first holds the lock.
    src, out, ref, a, big = start_a_long_import(tmp_path)
    env = cli_env()
    lock = out / "import.lock"
    b = subprocess.run(import_cmd(out, src), capture_output=True, text=True, env=env, timeout=60)
    _, a_err = a.communicate(timeout=60)
    assert a.returncode == 0, a_err
    assert "Traceback" not in b.stderr
    # The first takes over a second on this corpus; the second starts while it holds the lock.
    assert b.returncode == 2, b.stderr
    assert "another rematch import is running" in b.stderr and str(lock) in b.stderr
    assert traces(out) == ref
    db = sqlite3.connect(out / "ledger.sqlite")
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == len(big)
    finally:
        db.close()


def test_a_lock_file_removed_under_a_running_import_still_guards_the_folder(tmp_path: Path) -> None:
    """A cleanup deletes import.lock while an import runs: a second import is still refused."""
    src, out, ref, a, _ = start_a_long_import(tmp_path)
    env = cli_env()
    lock = out / "import.lock"
    lock.unlink()
    b = subprocess.run(import_cmd(out, src), capture_output=True, text=True, env=env, timeout=60)
    _, a_err = a.communicate(timeout=60)
    assert a.returncode == 0, a_err
    # The first takes over a second on this corpus; the second starts while it runs.
    assert b.returncode == 2, b.stderr
    lines = b.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in b.stderr, b.stderr
    # Named by the pid the first run wrote again, or (removed after that) as a folder held by a run.
    assert "another rematch import" in lines[0] and str(out) in lines[0]
    assert traces(out) == ref
