"""No one let in: hostile ids, paths, cwds and symlinks never put output outside the data folder;
outputs are private; a remote's credentials reach no output byte; disk full and a read-only folder
fail clearly and keep earlier output.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hostile_gen import (
    HARNESSES,
    assert_clean_stderr,
    cli_env,
    import_cmd,
    lines_for,
    make,
    path_for,
    report,
    run_import,
    sid_for,
    trace_records,
    traces,
    tree_snapshot,
    write,
)

HOSTILE_IDS = [
    "../../etc/x",
    "/etc/passwd",
    "a/b/c",
    "..",
    ".",
    "",
    "a\u0000b",
    "x" * 5000,
    "..\\..\\windows",
    "~root",
    "-rf",
    "\udc80lone",
    "con.jsonl",
    ".hidden",
    "ends.",
]
HOSTILE_CWDS = ["../../etc", "/", "/etc/../../..", "a\u0000b", "~" * 3000, "\\\\server\\share", ""]
SAFE_NAME = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9._-]{0,127}|_[0-9a-f]{40})(?:~\d+)?\.jsonl?$")
TOKEN = "ghp_S3cr3tT0kenAAAAAAAAAAAAAAAAAAAAAAAAAA"
PASSWORD = "hunter2passw0rd"


def with_id(harness: str, lines: list[dict[str, Any]], sid: str) -> list[dict[str, Any]]:
    """``lines`` with every place the harness states its session id set to ``sid``."""
    for line in lines:
        if harness == "claude_code" and "sessionId" in line:
            line["sessionId"] = sid
        elif harness == "codex" and line.get("type") == "session_meta":
            line["payload"]["id"] = sid
        elif harness == "omp" and line.get("type") == "session":
            line["id"] = sid
    return lines


def with_cwd(harness: str, lines: list[dict[str, Any]], cwd: str) -> list[dict[str, Any]]:
    """``lines`` with every cwd the harness states set to ``cwd``."""
    for line in lines:
        if "cwd" in line:
            line["cwd"] = cwd
        payload = line.get("payload")
        if isinstance(payload, dict) and "cwd" in payload:
            payload["cwd"] = cwd
    return lines


def every_output(out: Path) -> Iterator[Path]:
    """Every entry under the data folder."""
    for dirpath, dirnames, filenames in os.walk(out):
        for name in dirnames + filenames:
            yield Path(dirpath) / name


def assert_contained(tmp_path: Path, out: Path, before: dict[str, tuple[int, int]]) -> None:
    """Nothing changed outside ``out``; inside it, only plain files and folders with safe names."""
    assert tree_snapshot(tmp_path, exclude=out) == before, "the import wrote outside its data folder"
    real = out.resolve()
    for p in every_output(out):
        st = os.lstat(p)
        assert not stat.S_ISLNK(st.st_mode), f"{p} is a symlink"
        assert real in p.resolve().parents, p
        if p.parent.name in ("traces", "events"):
            assert SAFE_NAME.match(p.name), f"unsafe output name {p.name!r}"


@pytest.mark.parametrize("harness", HARNESSES)
def test_hostile_session_ids_stay_inside(harness: str, tmp_path: Path) -> None:
    src = tmp_path / "src"
    for n, sid in enumerate(HOSTILE_IDS, start=1):
        lines = with_id(harness, lines_for(harness, sid_for(harness, n)), sid)
        write(path_for(src, harness, sid_for(harness, n)), lines)
    # A sibling file a traversal would hit, and a folder outside it would create.
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "x.jsonl").write_text("precious")
    out = tmp_path / "a" / "b" / "data"
    before = tree_snapshot(tmp_path)
    proc = run_import(out, src)
    assert_clean_stderr(proc)
    assert report(proc)["files"]["failed"] == 0
    assert tree_snapshot(tmp_path, exclude=tmp_path / "a") == before
    assert_contained(tmp_path, out, tree_snapshot(tmp_path, exclude=out))
    assert (tmp_path / "etc" / "x.jsonl").read_text() == "precious"
    assert len(traces(out)) >= len(HOSTILE_IDS) - 2  # "" and a missing id may not name a session
    for body in traces(out).values():
        trace_records(body)


@pytest.mark.parametrize("harness", HARNESSES)
def test_hostile_cwds_stay_inside(harness: str, tmp_path: Path) -> None:
    src = tmp_path / "src"
    for n, cwd in enumerate(HOSTILE_CWDS, start=1):
        write(path_for(src, harness, sid_for(harness, n)), with_cwd(harness, lines_for(harness, sid_for(harness, n)), cwd))
    out = tmp_path / "data"
    before = tree_snapshot(tmp_path, exclude=out)
    proc = run_import(out, src)
    assert_clean_stderr(proc)
    assert proc.returncode == 0, proc.stderr
    assert_contained(tmp_path, out, before)
    assert report(proc)["sessions_imported"] == len(HOSTILE_CWDS)


def test_planted_symlinks_in_the_data_folder(tmp_path: Path) -> None:
    """A trace path pre-planted as a link to a file outside: replaced, the target untouched."""
    src = tmp_path / "src"
    for h in HARNESSES:
        make(src, h)
    out = tmp_path / "data"
    victim = tmp_path / "victim.txt"
    victim.write_text("do not touch")
    (out / "traces").mkdir(parents=True)
    (out / "events").mkdir()
    for h in HARNESSES:
        (out / "traces" / f"{sid_for(h)}.jsonl").symlink_to(victim)
        (out / "events" / f"{sid_for(h)}.jsonl").symlink_to(victim)
    proc = run_import(out, src)
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == "do not touch"
    for p in (out / "traces").iterdir():
        assert not p.is_symlink()


def test_data_subfolder_symlinked_outside_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "src"
    make(src, "omp")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "data"
    out.mkdir()
    (out / "traces").symlink_to(elsewhere, target_is_directory=True)
    proc = run_import(out, src)
    assert proc.returncode == 2  # fatal: the data folder cannot be written
    assert_clean_stderr(proc)
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "symbolic link" in proc.stderr
    assert list(elsewhere.iterdir()) == []


def test_transcript_symlinked_to_a_file_elsewhere_is_not_followed(tmp_path: Path) -> None:
    src = tmp_path / "src"
    real = make(tmp_path / "private", "codex")
    link = path_for(src, "codex", sid_for("codex", 1))
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    proc = run_import(tmp_path / "data", src)
    assert proc.returncode == 1  # nothing imported from the named folder: said
    assert "symbolic links are not followed" in proc.stderr
    assert report(proc)["sessions_imported"] == 0


def test_outputs_are_private_even_with_a_permissive_umask(tmp_path: Path) -> None:
    src = tmp_path / "src"
    for h in HARNESSES:
        make(src, h)
    out = tmp_path / "data"
    proc = subprocess.run(import_cmd(out, src), capture_output=True, text=True, env=cli_env(),
                          preexec_fn=lambda: os.umask(0), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    seen = 0
    for p in every_output(out):
        mode = stat.S_IMODE(p.stat().st_mode)
        if p.is_dir():
            assert mode == 0o700, f"{p}: {oct(mode)}"
        else:
            assert mode & 0o077 == 0, f"{p}: {oct(mode)}"
            seen += 1
    assert seen >= 7  # 3 traces, 3 event streams, the ledger, the lock


def make_repo(root: Path) -> Path:
    """A git work tree whose origin URL embeds a token and a password."""
    git = root / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs" / "heads" / "main").write_text("0123456789abcdef0123456789abcdef01234567\n")
    (git / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n"
        f'[remote "origin"]\n\turl = https://alice:{TOKEN}@github.com/org/secret-repo.git\n'
        "\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
        f'[remote "backup"]\n\turl = https://bob:{PASSWORD}@example.com/r.git\n'
    )
    (root / "sub").mkdir()
    return root


def test_git_remote_credentials_never_reach_an_output(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "work" / "repo")
    src = tmp_path / "src"
    for h in HARNESSES:
        lines = with_cwd(h, lines_for(h), str(repo / "sub"))
        # The secret also appears in what the user typed and in a tool's output: every stream.
        text = f"push to https://alice:{TOKEN}@github.com/org/secret-repo.git or https://bob:{PASSWORD}@example.com/r.git"
        blob = orjson.dumps(lines).decode().replace("please do task 1", text.replace('"', ""))
        blob = blob.replace("a\\nb", f"remote: https://alice:{TOKEN}@github.com/org/secret-repo.git")
        write(path_for(src, h, sid_for(h)), orjson.loads(blob))
    out = tmp_path / "data"
    proc = run_import(out, src)
    assert proc.returncode == 0, proc.stderr
    rows = sqlite3.connect(out / "ledger.sqlite").execute("SELECT repo_remote FROM sessions").fetchall()
    assert rows and all(r[0] and "github.com/org/secret-repo" in r[0] for r in rows), rows
    for p in every_output(out):
        if p.is_file():
            data = p.read_bytes()
            assert TOKEN.encode() not in data, f"token in {p}"
            assert PASSWORD.encode() not in data, f"password in {p}"
    assert TOKEN not in proc.stdout + proc.stderr


def mount_tmpfs(path: Path, size: str) -> bool:
    """Mount a small tmpfs at ``path`` (root only); whether it worked."""
    path.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
                         capture_output=True)
    return res.returncode == 0


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "mnt"
    if not mount_tmpfs(mnt, "400k"):
        pytest.skip("cannot mount a tmpfs here (needs root); the in-process ENOSPC test covers it")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_disk_full_and_read_only_keep_earlier_output(small_disk: Path, tmp_path: Path) -> None:
    src = tmp_path / "src"
    for h in HARNESSES:
        make(src, h, 1)
    out = small_disk / "data"
    first = run_import(out, src)
    assert first.returncode == 0, first.stderr
    earlier = traces(out)
    # Transcripts whose traces do not fit in what is left.
    for h in HARNESSES:
        make(src, h, 2, turns=900)
    full = run_import(out, src)
    # 1 when only files failed; 2 when the ledger itself could not be written (fatal).
    assert full.returncode in (1, 2)
    assert_clean_stderr(full)
    assert "No space left on device" in full.stderr or "disk is full" in full.stderr, full.stderr
    now = traces(out)
    for name, body in earlier.items():
        assert now[name] == body
    for name, body in now.items():
        recs = trace_records(body)
        assert recs[0]["ev"] == "session_start" and recs[-1]["ev"] == "session_shutdown", name
    # Read-only: one clear line, nothing changed.
    assert subprocess.run(["mount", "-o", "remount,ro", str(small_disk)]).returncode == 0
    ro = run_import(out, src)
    assert ro.returncode == 2  # fatal: nothing can be imported
    assert_clean_stderr(ro)
    assert len(ro.stderr.strip().splitlines()) == 1 and "is read-only" in ro.stderr
    assert traces(out) == now
    # With room again, the next run finishes the work.
    assert subprocess.run(["mount", "-o", "remount,rw,size=16m", str(small_disk)]).returncode == 0
    done = run_import(out, src)
    assert done.returncode == 0, done.stderr
    assert len(traces(out)) == 6
    with sqlite3.connect(out / "ledger.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 6


def test_disk_full_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC from every trace write (no mount needed): the file fails, earlier traces stay."""
    import rematch_claude_code
    import rematch_codex
    import rematch_omp
    import rematch_trace.importing.batch as batch
    import rematch_trace.store.datafolder as output
    from rematch_trace.store.datafolder import DataDir
    from rematch_trace.testing import make_host

    src = tmp_path / "src"
    for h in HARNESSES:
        make(src, h, 1)
    data = DataDir(tmp_path / "data")
    host = make_host([rematch_claude_code, rematch_codex, rematch_omp])
    assert batch.run_import([src], data, batch.ImportSettings(), host=host).count("imported") == 3
    earlier = traces(data.root)
    for h in HARNESSES:
        make(src, h, 2)

    def no_space(self: object, data_: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(output.AtomicFile, "write", no_space)
    summary = batch.run_import([src], data, batch.ImportSettings(), host=host)
    assert summary.count("failed") == 3
    assert all("No space left on device" in (f.reason or "") for f in summary.files if f.outcome == "failed")
    assert traces(data.root) == earlier
    assert not list(data.traces.glob(".*.tmp"))  # no temporaries left behind


def test_undecodable_file_names(tmp_path: Path) -> None:
    """File names that are not UTF-8 (bytes from another system): imported, reported, no crash."""
    src = tmp_path / "src"
    names = []
    for h in HARNESSES:
        good = path_for(src, h, sid_for(h))
        write(good, lines_for(h))
        raw = os.fsencode(good)
        bad = raw[: raw.rindex(b"/") + 1] + b"\xff\xfe" + os.fsencode(good.name)
        os.rename(raw, bad)
        # A broken line too, so a problem naming the file is printed.
        with open(bad, "ab") as f:
            f.write(b"{broken\n")
        names.append(bad)
    out = tmp_path / "data"
    proc = subprocess.run(import_cmd(out, src), capture_output=True, env=cli_env(), timeout=60)
    stderr = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr, stderr
    assert proc.returncode == 1  # the broken lines
    rep = orjson.loads(proc.stdout)
    assert rep["files"]["imported"] == 3 and rep["sessions_imported"] == 3
    assert len([x for x in stderr.splitlines() if "invalid JSON" in x]) == 3
    again = subprocess.run(import_cmd(out, src), capture_output=True, env=cli_env(), timeout=60)
    assert orjson.loads(again.stdout)["files"]["unchanged"] == 3
