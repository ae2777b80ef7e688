"""The mistakes users make, against the real ``rematch`` process: never a silent zero or a false all-clear.

Each test drives ``rematch`` as a user would (issue 12, items 5, 7, 10, 11 and
the small things): the wrong file or an empty folder, an unknown session or
data folder, a backup copy of a transcript, a read-only data folder, an id
prefix, and the exit statuses the README states.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from hostile_gen import cli_env, lines_for, path_for, report, run_import, sid_for, traces, write

CORPUS = Path("/work/shared/corpus")
CC_PROJECTS = CORPUS / "claude_code" / "projects"
OMP_PI = CORPUS / "omp" / "sessions" / "--Users-alice-code-my-project--" / "2025-01-01T10-00-00Z_pi-test-session-uuid.jsonl"
#: A Claude Code session of the corpus with two subagents that share its id as a prefix.
PARENT = "8463c716-a2ea-4c14-9efa-87158ebd9f20"


def rematch(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``rematch ARGS`` to completion."""
    return subprocess.run([sys.executable, "-m", "rematch_trace.cli", *args], capture_output=True, text=True,
                          timeout=120, env=cli_env(**env), errors="replace")


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a failed command (never a traceback)."""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    return lines[0]


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole shared corpus, imported (two of its omp lines are skipped on purpose)."""
    out = tmp_path_factory.mktemp("mistakes") / "data"
    proc = run_import(out, CC_PROJECTS, CORPUS / "codex", CORPUS / "omp" / "sessions")
    assert report(proc)["lines_skipped"] == 2 and report(proc)["files"]["failed"] == 0, proc.stderr
    return out


# -- item 5: what was skipped, and why -------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "body", "why"),
    [
        ("notes.txt", b"remember to buy milk\nand bread\n", "a text file, not JSON lines"),
        ("blob.bin", bytes(range(256)) * 8, "a binary file"),
        ("other.jsonl", b'{"kind": "metrics", "value": 3}\n', "JSON lines that no installed plugin recognises"),
        ("empty.jsonl", b"", "empty file"),
    ],
)
def test_a_file_that_is_not_a_transcript_is_skipped_with_its_reason(
    tmp_path: Path, name: str, body: bytes, why: str
) -> None:
    f = tmp_path / name
    f.write_bytes(body)
    proc = run_import(tmp_path / "data", f)
    assert proc.returncode == 1, proc.stderr  # the README: 1 when anything was skipped
    assert f"{f}: skipped: {why}" in proc.stderr
    assert report(proc)["files"]["skipped"] == 1


def test_a_folder_without_transcripts_is_named_with_what_was_looked_for(tmp_path: Path) -> None:
    empty, notes = tmp_path / "empty", tmp_path / "notes"
    empty.mkdir()
    (notes / "deep").mkdir(parents=True)
    (notes / "deep" / "README.md").write_text("not a transcript\n")
    good = write(path_for(tmp_path / "good", "codex", sid_for("codex")), lines_for("codex"))
    proc = run_import(tmp_path / "data", empty, notes, good.parent)
    assert proc.returncode == 1
    for folder in (empty, notes):
        assert f"{folder}: skipped: a folder with no transcript files in it or under it (looked for *.jsonl" \
            in proc.stderr
    assert report(proc)["sessions_imported"] == 1  # the readable one still imports


def test_nothing_found_lists_every_place_searched(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude" / "projects").mkdir(parents=True)  # exists, but empty
    proc = rematch("import", "--out", str(tmp_path / "data"), HOME=str(home))
    assert proc.returncode == 1
    line = next(x for x in proc.stderr.splitlines() if "no transcripts found" in x)
    assert f"{home}/.claude/projects (claude_code)" in line
    assert f"{home}/.codex/sessions (codex, no such folder)" in line
    assert "(omp, no such folder)" in line


# -- item 7: no false all-clear ----------------------------------------------------------------


def test_audit_of_an_unknown_session_is_an_error_not_an_all_clear(imported: Path) -> None:
    proc = rematch("audit", "deadbeef", "--out", str(imported))
    assert proc.returncode == 1
    assert "no session 'deadbeef'" in one_line(proc)
    assert "no risky actions" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("command", [["audit"], ["flagged"], ["show", PARENT], ["audit", PARENT]])
def test_reading_commands_on_a_missing_or_empty_data_folder(tmp_path: Path, command: list[str]) -> None:
    missing = rematch(*command, "--out", str(tmp_path / "no" / "such"))
    assert missing.returncode == 1
    assert "nothing imported into" in one_line(missing) and "no such folder" in missing.stderr
    assert "no risky actions" not in missing.stdout and "no flagged" not in missing.stdout
    (tmp_path / "empty").mkdir()
    empty = rematch(*command, "--out", str(tmp_path / "empty"))
    assert empty.returncode == 1 and "nothing imported into" in one_line(empty)


def test_audit_without_event_streams_says_so(tmp_path: Path) -> None:
    out = tmp_path / "data"
    imp = rematch("import", str(CC_PROJECTS), "--out", str(out), "--no-events")
    assert imp.returncode == 0, imp.stderr
    for args in (["audit"], ["audit", PARENT]):
        proc = rematch(*args, "--out", str(out))
        assert proc.returncode == 1 and "no security events" in one_line(proc)


def test_an_empty_default_folder_says_how_to_name_another(tmp_path: Path) -> None:
    proc = rematch("flagged", HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "xdg"))
    assert proc.returncode == 1
    line = one_line(proc)
    assert "the default data folder" in line and "--data" in line and "REMATCH_HOME" in line


# -- the id-prefix rule ------------------------------------------------------------------------


def test_show_and_audit_take_one_prefix_rule(imported: Path) -> None:
    prefix = PARENT[:12]  # what audit prints; the session's subagents share it
    assert len(list((imported / "traces").glob(f"{prefix}*"))) == 3
    full, short = rematch("show", PARENT, "--out", str(imported)), rematch("show", prefix, "--out", str(imported))
    assert short.returncode == 0 and short.stdout == full.stdout
    first = rematch("show", prefix, "--out", str(imported), "--json").stdout.splitlines()[0]
    assert orjson.loads(first)["session_id"] == PARENT  # the session, not one of its subagents
    a_full = rematch("audit", PARENT, "--out", str(imported), "--json")
    a_short = rematch("audit", prefix, "--out", str(imported), "--json")
    assert a_short.returncode == 0 and orjson.loads(a_short.stdout) == orjson.loads(a_full.stdout)
    # Two subagents, neither the other's parent: ambiguous, each named.
    sub = rematch("show", f"{PARENT}.agent-a", "--out", str(imported))
    assert sub.returncode == 2
    assert f"{PARENT}.agent-a7be2f0" in one_line(sub) and f"{PARENT}.agent-acompact" in sub.stderr
    # The session over its five subagents; two sessions: ambiguous, and a cut list says how many it left out.
    fe = rematch("show", "fe", "--out", str(imported), "--json")
    assert fe.returncode == 0
    assert orjson.loads(fe.stdout.splitlines()[0])["session_id"] == "fe5e1c67-53e7-4862-81ae-d0e013e3270b"
    many = rematch("audit", "f", "--out", str(imported))
    assert many.returncode == 2
    assert one_line(many).endswith("sidechain-4 and 2 more; give more of the id")


# -- item 10: two files, one session -----------------------------------------------------------


def _copies(tmp_path: Path) -> tuple[Path, Path, str]:
    """A transcript (``new``) and an older backup copy of it (``old``, its first lines) in another folder."""
    sid = sid_for("claude_code", 7)
    lines = lines_for("claude_code", sid, turns=4)
    new = write(path_for(tmp_path / "live", "claude_code", sid), lines)
    old = write(path_for(tmp_path / "backup", "claude_code", sid), lines[: len(lines) // 2])
    return new, old, sid


def test_an_older_copy_never_replaces_a_fuller_trace(tmp_path: Path) -> None:
    new, old, sid = _copies(tmp_path)
    out = tmp_path / "data"
    assert run_import(out, new).returncode == 0
    fuller = traces(out)
    proc = run_import(out, old)
    assert traces(out) == fuller  # the trace still holds every record
    assert proc.returncode == 1  # this file's copy was not imported
    said = [x for x in proc.stderr.splitlines() if f"session {sid} is in 2 files" in x]
    assert len(said) == 1 and str(new) in said[0] and str(old) in said[0], proc.stderr
    assert report(proc)["sessions_total"] == 1 and report(proc)["sessions_imported"] == 0
    again = run_import(out, old)  # said once: an unchanged file is not read again
    assert again.returncode == 0 and sid not in again.stderr
    flagged = rematch("show", sid, "--out", str(out), "--json")
    assert flagged.stdout.encode() == fuller[f"{sid}.jsonl"]


def test_a_fuller_copy_replaces_an_older_one(tmp_path: Path) -> None:
    new, old, sid = _copies(tmp_path)
    alone = tmp_path / "alone"
    assert run_import(alone, new).returncode == 0
    out = tmp_path / "data"
    assert run_import(out, old).returncode == 0
    proc = run_import(out, new)
    assert proc.returncode == 0  # nothing of this run was left out
    assert traces(out) == traces(alone)
    assert f"session {sid} is in 2 files; kept the copy of {new}" in proc.stderr


@pytest.mark.parametrize("jobs", [1, 2])
def test_two_copies_in_one_run_keep_the_fuller_and_count_once(tmp_path: Path, jobs: int) -> None:
    new, old, sid = _copies(tmp_path)
    alone = tmp_path / "alone"
    assert run_import(alone, new).returncode == 0
    # Many copies of one session, as archives hold: every order of finishing must end the same.
    for n in range(6):
        shutil.copy(old, old.with_name(f"{sid}-copy{n}.jsonl"))
    out = tmp_path / "data"
    proc = run_import(out, tmp_path / "backup", new, jobs=jobs)
    assert traces(out) == traces(alone)
    rep = report(proc)
    assert rep["sessions_imported"] == 1 == rep["sessions_total"], rep
    assert proc.returncode == 1
    said = [x for x in proc.stderr.splitlines() if f"session {sid} is in 8 files" in x]
    assert len(said) == 1 and f"kept the copy of {new}" in said[0] and " and 4 more" in said[0], proc.stderr
    ledger = rematch("flagged", "--out", str(out), "--json")
    assert ledger.returncode == 1 and ledger.stdout == "[]\n"  # read, and nothing flagged: nothing found is 1


def test_two_copies_of_one_size_keep_the_same_one_in_any_order(tmp_path: Path) -> None:
    """Copies that tie on records and size: the kept one follows from their bytes, not from who came last."""
    sid = sid_for("claude_code", 9)
    lines = lines_for("claude_code", sid, turns=3)
    other = [dict(x) for x in lines]
    stamp = other[0]["timestamp"]
    other[0]["timestamp"] = stamp[:-2] + ("9" if stamp[-2] != "9" else "8") + "Z"  # same length, other bytes
    a = write(path_for(tmp_path / "a", "claude_code", sid), lines)
    b = write(path_for(tmp_path / "b", "claude_code", sid), other)

    def outputs(out: Path) -> dict[str, bytes]:
        return {f"{d}/{p.name}": p.read_bytes() for d in ("traces", "events") for p in sorted((out / d).glob("*"))}

    ab, ba = tmp_path / "ab", tmp_path / "ba"
    run_import(ab, a)
    run_import(ab, b)
    run_import(ba, b)
    run_import(ba, a)
    assert traces(ab) and outputs(ab) == outputs(ba)
    for jobs in (1, 2):
        both = tmp_path / f"both-{jobs}"
        run_import(both, a, b, jobs=jobs)
        assert outputs(both) == outputs(ab), jobs
    alone_a, alone_b = tmp_path / "alone-a", tmp_path / "alone-b"
    run_import(alone_a, a)
    run_import(alone_b, b)
    assert outputs(alone_a) != outputs(alone_b)  # the two copies really differ
    assert outputs(ab) in (outputs(alone_a), outputs(alone_b))


# -- item 11: a read-only data folder ----------------------------------------------------------


@pytest.fixture
def read_only_data(tmp_path: Path) -> Iterator[Path]:
    """A data folder with the corpus's Claude Code sessions, on a file system then mounted read-only."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m,mode=0700", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        out = mnt / "data"
        assert run_import(out, CC_PROJECTS).returncode == 0
        assert subprocess.run(["mount", "-o", "remount,ro", str(mnt)]).returncode == 0
        yield out
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_read_only_data_folder_is_read_and_never_written(read_only_data: Path) -> None:
    out = str(read_only_data)
    flagged = rematch("flagged", "--out", out)
    assert flagged.returncode == 0 and PARENT in flagged.stdout, flagged.stderr
    show = rematch("show", PARENT[:12], "--out", out)
    assert show.returncode == 0 and "session_start" in show.stdout, show.stderr
    audit = rematch("audit", "--out", out)
    assert audit.returncode == 0 and "risky action(s)" in audit.stdout, audit.stderr
    for args in (["lake", "migrate"], ["import", str(CC_PROJECTS)]):
        proc = rematch(*args, "--out", out)
        assert proc.returncode == 2
        assert f"the data folder {out} is read-only" in one_line(proc)


# -- the small things --------------------------------------------------------------------------


def test_unknown_omp_entry_types_are_counted_among_skipped_lines(tmp_path: Path) -> None:
    proc = run_import(tmp_path / "data", OMP_PI)
    rep = report(proc)
    # One line is not JSON, one is of an entry type omp does not write: both skipped.
    assert rep["lines_skipped"] == 2, rep
    assert proc.returncode == 1


def test_help_names_the_data_folder_the_environment_and_the_exit_statuses(tmp_path: Path) -> None:
    proc = rematch("--help", HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "xdg"))
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert f"default: {tmp_path / 'xdg' / 'rematch'}" in text
    for name in ("REMATCH_HOME", "REMATCH_LOAD_PLUGINS", "REMATCH_MAX_LINE_MB", "REMATCH_DEBUG", "rematch plugins"):
        assert name in text
    for code in ("0 done", "1 something not imported", "2 a usage error", "128+N an import stopped by signal N"):
        assert code in text


def test_a_held_lock_is_a_fatal_error(tmp_path: Path) -> None:
    out = tmp_path / "data"
    src = write(path_for(tmp_path / "src", "omp", sid_for("omp")), lines_for("omp"))
    assert run_import(out, src).returncode == 0
    fd = os.open(out / "import.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        proc = run_import(out, src)
    finally:
        os.close(fd)
    assert proc.returncode == 2
    assert "another rematch import is running" in one_line(proc)
