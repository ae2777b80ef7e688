"""The batch import on a Dask LocalCluster, against the real ``rematch`` process.

Same outputs as a local ``--jobs 1`` import on clusters of 2 and 4 workers;
per-worker counts in ``--json``; an unchanged file is not shipped and a grown
one is continued; and a worker process killed mid-write (the cluster's nanny
restarts it) loses nothing and leaves nothing half-written: its files are
retried, and one that kills a worker on every attempt is reported failed.

Clusters are small (two cores in CI) and every run closes its own.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hostile_gen import (
    HARNESSES,
    cli_env,
    import_cmd,
    lines_for,
    path_for,
    report,
    run_import,
    sid_for,
    write,
)

pytest.importorskip("distributed")

FILES_PER_HARNESS = 4
DATA_FOLDERS = ("traces", "events", "pending")


def outputs(out: Path) -> dict[str, bytes]:
    """Every file of the data folder's output folders, by relative path."""
    return {
        str(p.relative_to(out)): p.read_bytes()
        for folder in DATA_FOLDERS if (out / folder).is_dir()
        for p in sorted((out / folder).iterdir())
    }


def archive(src: Path, turns: int = 30) -> list[Path]:
    """A small archive of the three harnesses, one file per harness larger than the rest."""
    paths = []
    for h in HARNESSES:
        for n in range(FILES_PER_HARNESS):
            sid = sid_for(h, n + 1)
            paths.append(write(path_for(src, h, sid), lines_for(h, sid, turns=turns * 8 if n == 0 else turns)))
    return paths


def on_cluster(out: Path, src: Path, scheduler: str, timeout: float = 180, **env: str) -> subprocess.CompletedProcess[str]:
    """``rematch import --json --scheduler ...`` to completion."""
    argv = [*import_cmd(out, src), "--scheduler", scheduler]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=cli_env(**env), errors="replace")


def test_local_clusters_of_two_and_four_write_what_one_job_writes(tmp_path: Path) -> None:
    src = tmp_path / "src"
    files = archive(src)
    local = run_import(tmp_path / "local", src, jobs=1)
    assert local.returncode == 0, local.stderr
    expected = outputs(tmp_path / "local")
    assert len([k for k in expected if k.startswith("traces/")]) == len(files)
    for workers in (2, 4):
        out = tmp_path / f"cluster{workers}"
        proc = on_cluster(out, src, f"local:{workers}")
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == "", proc.stderr  # dask's own logging stays quiet
        assert outputs(out) == expected
        summary = report(proc)
        assert summary["files"]["imported"] == len(files) and summary["files"]["failed"] == 0
        per_worker = summary["workers"]
        assert set(per_worker) <= {str(n) for n in range(workers)} and per_worker
        assert sum(w["files"] for w in per_worker.values()) == len(files)
        assert sum(w["bytes"] for w in per_worker.values()) == sum(f.stat().st_size for f in files)
        assert all(w["tasks"] >= 1 and w["busy_seconds"] > 0 for w in per_worker.values())


def _preload(tmp_path: Path, flaky: str, poison: str) -> Path:
    """A worker preload that SIGKILLs its own worker mid-write.

    On the first write of any output of session ``flaky`` for each kind of
    output file (atomic, continued in place), and on every write of ``poison``'s.
    A marker file per kind makes "first" hold across worker processes.
    """
    marks = tmp_path / "marks"
    marks.mkdir()
    script = tmp_path / "kill_preload.py"
    script.write_text(f'''
import os
import signal

from rematch_trace.store.datafolder import AtomicFile
from rematch_trace.store.journal import AppendFile


def _killing(cls):
    original = cls.write

    def write(self, data):
        original(self, data)
        name = self.target.name
        if {poison!r} in name:
            self.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        if {flaky!r} in name:
            try:
                os.close(os.open(os.path.join({str(marks)!r}, cls.__name__), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return
            self.flush()  # half of the output is on disk when the worker dies
            os.kill(os.getpid(), signal.SIGKILL)

    cls.write = write


def dask_setup(worker):
    _killing(AtomicFile)
    _killing(AppendFile)
''')
    return script


def test_a_killed_worker_loses_nothing_and_a_file_killing_two_fails(tmp_path: Path) -> None:
    src = tmp_path / "src"
    archive(src)
    flaky, poison = sid_for("claude_code", 2), sid_for("codex", 3)
    # The flaky file is the first half of a longer session: it grows into the whole later.
    grown = lines_for("claude_code", flaky, turns=60)
    flaky_path = write(path_for(src, "claude_code", flaky), grown[: len(grown) // 2])
    # Over the task size (2 MiB): alone in its task, so the flaky file never shares its deaths.
    poison_path = write(path_for(src, "codex", poison), lines_for("codex", poison, turns=1200))
    assert poison_path.stat().st_size > 2 << 20
    env = {"DASK_DISTRIBUTED__WORKER__PRELOAD": f'["{_preload(tmp_path, flaky, poison)}"]'}
    out = tmp_path / "out"

    def expected() -> dict[str, bytes]:
        """What one local job writes of the archive as it is now, without the poison file."""
        clean = tmp_path / "clean_src"
        subprocess.run(["rm", "-rf", str(clean), str(tmp_path / "clean")], check=True)
        subprocess.run(["cp", "-a", str(src), str(clean)], check=True)
        path_for(clean, "codex", poison).unlink()
        proc = run_import(tmp_path / "clean", clean, jobs=1)
        assert proc.returncode == 0, proc.stderr
        return outputs(tmp_path / "clean")

    def check(proc: subprocess.CompletedProcess[str], outcome: str) -> dict[str, object]:
        assert proc.returncode == 1, proc.stderr  # the poison file failed
        assert "Traceback" not in proc.stderr, proc.stderr
        summary = report(proc)
        failures = summary["failures"]
        assert [f["path"] for f in failures] == [str(poison_path)], "\n".join(map(str, [*failures, *summary["worker_deaths"]]))
        assert "killed a cluster worker twice" in failures[0]["reason"]
        deaths = summary["worker_deaths"]
        assert any(str(poison_path) in d and d.endswith("again: not retried") for d in deaths), deaths
        # Its worker died once (with the task it was in, which is retried file by file) and no more.
        assert any(str(flaky_path) in d and "retried" in d and "not retried" not in d for d in deaths), "\n".join(deaths)
        assert not any(str(flaky_path) in d and "not retried" in d for d in deaths), deaths
        assert summary["files"][outcome] >= 1
        # Nothing half-written: every output is a clean import's, temporaries swept.
        assert outputs(out) == expected()
        assert not any(poison in name for name in outputs(out))
        return summary

    # A first import: the flaky file's worker dies writing its trace; it is retried whole.
    summary = check(on_cluster(out, src, "local:2", **env), "imported")
    assert summary["files"]["imported"] == len(HARNESSES) * FILES_PER_HARNESS - 1

    # The flaky file grows: its continuation's worker dies writing in place (after its journal
    # entry); the retry continues it again, and the run (which has a failure) settles the journal.
    write(flaky_path, grown)
    summary = check(on_cluster(out, src, "local:2", **env), "resumed")
    assert summary["files"] == {"imported": 0, "resumed": 1, "unchanged": len(HARNESSES) * FILES_PER_HARNESS - 2,
                                "skipped": 0, "failed": 1}
    assert not list((out / "journal").glob("*.jsonl"))


def test_an_unchanged_archive_starts_no_cluster(tmp_path: Path) -> None:
    src = tmp_path / "src"
    files = archive(src, turns=4)
    out = tmp_path / "out"
    first = run_import(out, src, jobs=1)
    assert first.returncode == 0, first.stderr
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file() and p.suffix == ".jsonl"}
    # A scheduler nobody listens on is said at once, in one line, exit 2 (issue 33: it used to wait
    # 30 s), before anything is planned: nothing of the data folder changes.
    proc = on_cluster(out, src, "tcp://127.0.0.1:9", timeout=60)
    assert proc.returncode == 2 and "cannot connect" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file() and p.suffix == ".jsonl"} == before
    # With nothing to ship, a local cluster is never started.
    proc = on_cluster(out, src, "local:2", timeout=120)
    assert proc.returncode == 0, proc.stderr
    summary = report(proc)
    assert summary["files"]["unchanged"] == len(files) and summary["workers"] == {}


def test_scheduler_errors_are_one_line(tmp_path: Path) -> None:
    src = tmp_path / "src"
    archive(src, turns=2)
    # Usage errors (issue 33: the README's exit table): exit 2, one line naming what is expected.
    bad = on_cluster(tmp_path / "out", src, "local:0")
    assert bad.returncode == 2 and "at least one worker" in bad.stderr and "Traceback" not in bad.stderr
    bad = on_cluster(tmp_path / "out", src, "nonsense")
    assert bad.returncode == 2 and "expected local:N" in bad.stderr and "Traceback" not in bad.stderr


def test_ctrl_c_ends_a_local_cluster_run_and_keeps_what_finished(tmp_path: Path) -> None:
    import signal
    import time

    import psutil

    src = tmp_path / "src"
    files = archive(src)
    # Each output's commit slowed by a worker preload, so the signal lands while workers are mid-task.
    script = tmp_path / "slow_preload.py"
    script.write_text(
        "import time\nfrom rematch_trace.store.datafolder import AtomicFile\n"
        "def dask_setup(worker):\n    original = AtomicFile.commit\n"
        "    def commit(self, *args, **kwargs):\n        time.sleep(0.2)\n        original(self, *args, **kwargs)\n"
        "    AtomicFile.commit = commit\n"
    )
    out = tmp_path / "out"
    argv = [*import_cmd(out, src), "--scheduler", "local:2"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=cli_env(DASK_DISTRIBUTED__WORKER__PRELOAD=f'["{script}"]'))
    deadline = time.monotonic() + 120
    while not (out / "traces").is_dir() or not any((out / "traces").glob("*.jsonl")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.02)
    workers = psutil.Process(proc.pid).children(recursive=True)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal does: the client and its workers
    _stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted (SIGINT)" in stderr and "Traceback" not in stderr, stderr
    for w in workers:
        try:
            assert w.wait(timeout=10) is not None or not w.is_running()
        except psutil.NoSuchProcess:
            pass
    # No lock left, nothing half-written: a rerun finishes the rest, with a clean import's bytes.
    rest = run_import(out, src, jobs=1)
    assert rest.returncode == 0, rest.stderr
    # Outcomes travel per task: a task cut short is imported again, whatever of it was written.
    assert report(rest)["files"]["failed"] == 0
    clean = run_import(tmp_path / "clean", src, jobs=1)
    assert clean.returncode == 0 and outputs(out) == outputs(tmp_path / "clean")
    assert len([k for k in outputs(out) if k.startswith("traces/")]) == len(files)


def test_a_running_scheduler_by_its_address(tmp_path: Path) -> None:
    """The remote path: a scheduler started elsewhere (here, by the test), reached over tcp://."""
    import logging

    from distributed import LocalCluster
    from hostile_gen import PLUGINS_ENV

    src = tmp_path / "src"
    files = archive(src, turns=10)
    sid = sid_for("omp", 2)
    full = lines_for("omp", sid, turns=40)
    grows = write(path_for(src, "omp", sid), full[: len(full) // 2])
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL,
                      env={"REMATCH_LOAD_PLUGINS": PLUGINS_ENV}) as cluster:
        proc = on_cluster(tmp_path / "out", src, cluster.scheduler_address)
        assert proc.returncode == 0, proc.stderr
        # The workers outlive the run; a second run ships only the grown file and continues it.
        write(grows, full)
        again = on_cluster(tmp_path / "out", src, cluster.scheduler_address)
        assert again.returncode == 0, again.stderr
    local = run_import(tmp_path / "local", src, jobs=1)
    assert local.returncode == 0, local.stderr
    assert outputs(tmp_path / "out") == outputs(tmp_path / "local")
    summary, rerun = report(proc), report(again)
    assert sum(w["files"] for w in summary["workers"].values()) == len(files)
    assert (rerun["files"]["resumed"], rerun["files"]["unchanged"]) == (1, len(files) - 1)
    assert sum(w["files"] for w in rerun["workers"].values()) == 1
    assert not list((tmp_path / "out" / "journal").glob("*.jsonl"))
