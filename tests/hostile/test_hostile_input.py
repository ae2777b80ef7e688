"""Broken bytes, broken lines and broken files, for each harness, through the real ``rematch import``.

Each case writes one transcript per harness with the damage applied, runs the
CLI once, and asserts the exit status, the one-line error naming file and line,
no traceback, the sessions that still imported (byte-identical to a clean
import where the damage is a skipped line) and nothing written outside the
data folder.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from hostile_gen import (
    HARNESSES,
    assert_clean_stderr,
    dump,
    lines_for,
    path_for,
    report,
    run_import,
    sid_for,
    traces,
    tree_snapshot,
)

Damage = Callable[[list[bytes]], list[bytes]]
#: Where junk lines go: after the first two lines (line 3 of the file, 1-based).
AT = 2


def insert(*junk: bytes) -> Damage:
    """Put ``junk`` lines at :data:`AT`."""
    return lambda lines: [*lines[:AT], *junk, *lines[AT:]]


# name -> (damage, the messages expected on stderr for the junk lines (by 1-based line), exit status)
LINE_CASES: dict[str, tuple[Damage, list[tuple[int, str]], int]] = {
    "invalid_utf8": (insert(b'{"type":"user","text":"\xff\xfe\xc3"}'), [(AT + 1, "invalid UTF-8")], 1),
    "nul_bytes": (insert(b'{"a":1}\x00\x00', b"\x00" * 64), [(AT + 1, "invalid JSON"), (AT + 2, "invalid JSON")], 1),
    "non_object_lines": (
        insert(b"[1,2]", b'"text"', b"42", b"null", b"true"),
        [(AT + 1, "not a JSON object (list)"), (AT + 2, "not a JSON object (str)"), (AT + 3, "not a JSON object (int)"),
         (AT + 4, "not a JSON object (NoneType)"), (AT + 5, "not a JSON object (bool)")],
        1,
    ),
    "deep_nesting": (
        insert(b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 100_000 + b"1" + b"}" * 100_000),
        [(AT + 1, "nested too deeply"), (AT + 2, "nested too deeply")],
        1,
    ),
    "garbage_json": (insert(b"{not json", b"}{", b'{"a":1,}'), [(AT + 1, "invalid JSON"), (AT + 2, "invalid JSON"),
                                                                (AT + 3, "invalid JSON")], 1),
}


def clean_lines(harness: str, n: int = 0) -> list[bytes]:
    """A valid transcript of ``harness`` as encoded lines (no newlines)."""
    return [dump(x).rstrip(b"\n") for x in lines_for(harness, sid_for(harness, n))]


def write_raw(path: Path, lines: list[bytes], newline: bytes = b"\n", prefix: bytes = b"") -> Path:
    """Write encoded lines with ``newline`` after each."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(prefix + b"".join(x + newline for x in lines))
    return path


def clean_traces(tmp_path: Path, n: int = 0) -> dict[str, bytes]:
    """The traces a clean import of the three valid transcripts writes."""
    src = tmp_path / "clean_src"
    for h in HARNESSES:
        write_raw(path_for(src, h, sid_for(h, n)), clean_lines(h, n))
    out = tmp_path / "clean_data"
    proc = run_import(out, src)
    assert proc.returncode == 0, proc.stderr
    return traces(out)


def run_case(tmp_path: Path, build: Callable[[Path], None], **env: str) -> tuple[object, dict[str, bytes], Path]:
    """Build sources under ``tmp_path/src``, import into ``tmp_path/data``; check nothing landed elsewhere."""
    src = tmp_path / "src"
    build(src)
    out = tmp_path / "data"
    # A home of its own, inside the snapshot: a write to ~ or a cache folder would show.
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"), "XDG_DATA_HOME": str(home / ".local"),
           "TMPDIR": str(home / "tmp"), **env}
    before = tree_snapshot(tmp_path, exclude=out)
    proc = run_import(out, src, **env)
    after = tree_snapshot(tmp_path, exclude=out)
    assert before == after, "the import wrote outside its data folder"
    assert_clean_stderr(proc)
    return proc, traces(out), src


@pytest.mark.parametrize("case", sorted(LINE_CASES))
def test_bad_line_reported_and_rest_imported(case: str, tmp_path: Path) -> None:
    damage, expected, status = LINE_CASES[case]
    paths: dict[str, Path] = {}

    def build(src: Path) -> None:
        for h in HARNESSES:
            paths[h] = write_raw(path_for(src, h, sid_for(h)), damage(clean_lines(h)))

    proc, got, _ = run_case(tmp_path, build)
    assert proc.returncode == status, proc.stderr  # type: ignore[attr-defined]
    for h in HARNESSES:
        for line, msg in expected:
            hits = [x for x in proc.stderr.splitlines() if x.startswith(f"rematch: {paths[h]}:{line}: ")]  # type: ignore[attr-defined]
            assert hits and msg in hits[0], f"{h}: no '{msg}' error for line {line} in:\n{proc.stderr}"  # type: ignore[attr-defined]
    # The skipped lines changed nothing else: every session imported exactly as from the clean file.
    assert got == clean_traces(tmp_path)
    rep = report(proc)  # type: ignore[arg-type]
    assert rep["files"]["imported"] == 3 and rep["sessions_imported"] == 3


def test_bom_and_crlf_change_nothing(tmp_path: Path) -> None:
    def build(src: Path) -> None:
        for h in HARNESSES:
            write_raw(path_for(src, h, sid_for(h)), clean_lines(h), newline=b"\r\n", prefix=b"\xef\xbb\xbf")

    proc, got, _ = run_case(tmp_path, build)
    assert proc.returncode == 0, proc.stderr  # type: ignore[attr-defined]
    assert proc.stderr == ""  # type: ignore[attr-defined]
    assert got == clean_traces(tmp_path)


def test_lone_surrogates_and_duplicate_keys_import(tmp_path: Path) -> None:
    """Valid JSON, odd Unicode and repeated keys: imported without a problem; the last key wins."""

    def build(src: Path) -> None:
        for h in HARNESSES:
            lines = clean_lines(h)
            # A lone surrogate escape inside the first prompt text, and a repeated key on a line.
            for i, x in enumerate(lines):
                if b"please do task 0" in x:
                    lines[i] = x.replace(b"please do task 0", b"please \\ud800 do \\udfff task 0", 1)
                    break
            lines[1] = lines[1][:-1] + b',"zz":1,"zz":[2]}'
            write_raw(path_for(src, h, sid_for(h)), lines)

    proc, got, _ = run_case(tmp_path, build)
    assert proc.returncode == 0, proc.stderr  # type: ignore[attr-defined]
    assert len(got) == 3
    for name, body in got.items():
        text = body.decode("utf-8")  # the trace itself is valid UTF-8
        assert "task 0" in text, name
        for line in body.splitlines():
            orjson.loads(line)  # and every line parses with a strict parser


def test_numbers_out_of_range(tmp_path: Path) -> None:
    def build(src: Path) -> None:
        for h in HARNESSES:
            lines = clean_lines(h)
            lines.insert(AT, b'{"type":"user","timestamp":1e999,"n":123456789012345678901234567890,"m":-1e400}')
            last = orjson.loads(lines[-1])
            last["timestamp"] = 10**30
            lines[-1] = orjson.dumps({k: v for k, v in last.items() if k != "timestamp"})[:-1] + b',"timestamp":1e400}'
            write_raw(path_for(src, h, sid_for(h)), lines)

    proc, got, _ = run_case(tmp_path, build)
    assert proc.returncode in (0, 1), proc.stderr  # type: ignore[attr-defined]
    assert len(got) == 3
    for body in got.values():
        recs = [orjson.loads(x) for x in body.splitlines()]
        assert recs[0]["ev"] == "session_start" and recs[-1]["ev"] == "session_shutdown"
        assert b"Infinity" not in body and b"NaN" not in body


def test_truncated_last_line_then_completed(tmp_path: Path) -> None:
    """A harness still writing: what is complete imports; the next run picks up the rest."""
    paths: dict[str, Path] = {}
    cut: dict[str, tuple[bytes, bytes]] = {}

    def build(src: Path) -> None:
        for h in HARNESSES:
            lines = clean_lines(h)
            body = b"".join(x + b"\n" for x in lines[:-1])
            last = lines[-1] + b"\n"
            cut[h] = (body + last[: len(last) // 2], last[len(last) // 2 :])
            paths[h] = write_raw(path_for(src, h, sid_for(h)), [])
            paths[h].write_bytes(cut[h][0])

    proc, got, _ = run_case(tmp_path, build)
    # A truncated tail is not an error: it is left for the next run.
    assert proc.returncode == 0, proc.stderr  # type: ignore[attr-defined]
    assert len(got) == 3
    for h in HARNESSES:
        with open(paths[h], "ab") as f:
            f.write(cut[h][1])
    again = run_import(tmp_path / "data", tmp_path / "src")
    assert again.returncode == 0, again.stderr
    rep = report(again)
    assert rep["files"]["resumed"] + rep["files"]["imported"] == 3
    assert traces(tmp_path / "data") == clean_traces(tmp_path)


def test_oversized_line_skipped(tmp_path: Path) -> None:
    """A line past REMATCH_MAX_LINE_MB is skipped with a one-line error; the rest imports unchanged."""
    paths: dict[str, Path] = {}

    def build(src: Path) -> None:
        for h in HARNESSES:
            p = write_raw(path_for(src, h, sid_for(h)), [])
            lines = clean_lines(h)
            with open(p, "wb") as f:
                for x in lines[:AT]:
                    f.write(x + b"\n")
                f.write(b'{"type":"user","blob":"')
                chunk = b"x" * (1 << 20)
                for _ in range(12):
                    f.write(chunk)
                f.write(b'"}\n')
                for x in lines[AT:]:
                    f.write(x + b"\n")
            paths[h] = p

    proc, got, _ = run_case(tmp_path, build, REMATCH_MAX_LINE_MB="2")
    assert proc.returncode == 1  # type: ignore[attr-defined]
    for h in HARNESSES:
        assert f"rematch: {paths[h]}:{AT + 1}: line longer than the 2 MiB limit" in proc.stderr  # type: ignore[attr-defined]
    assert got == clean_traces(tmp_path)


def test_empty_and_binary_files_with_transcript_names(tmp_path: Path) -> None:
    """Nothing to import and nothing claimed: each skipped with its reason, the good file beside them imports."""

    def build(src: Path) -> None:
        for h in HARNESSES:
            write_raw(path_for(src, h, sid_for(h)), clean_lines(h))
            path_for(src, h, sid_for(h, 1)).write_bytes(b"")
            path_for(src, h, sid_for(h, 2)).write_bytes(bytes(range(256)) * 64)
            path_for(src, h, sid_for(h, 3)).write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(2048))

    proc, got, _ = run_case(tmp_path, build)
    rep = report(proc)  # type: ignore[arg-type]
    # An empty file named like a rollout is Codex's (a session not yet written): imported, no session.
    assert rep["files"]["failed"] == 0 and rep["files"]["imported"] in (3, 4)
    assert rep["sessions_imported"] == 3
    assert proc.returncode == 1, proc.stderr  # type: ignore[attr-defined]
    assert rep["files"]["skipped"] == len(rep["skipped"]) >= 8
    assert {s["reason"] for s in rep["skipped"]} <= {"empty file, not a transcript",
                                                     "a binary file, not a JSONL transcript"}
    assert got == clean_traces(tmp_path)


def test_directory_symlink_loop(tmp_path: Path) -> None:
    def build(src: Path) -> None:
        for h in HARNESSES:
            p = write_raw(path_for(src, h, sid_for(h)), clean_lines(h))
            (p.parent / "loop").symlink_to(p.parent, target_is_directory=True)
            (p.parent / "up").symlink_to(src, target_is_directory=True)
        (src / "self").symlink_to(src, target_is_directory=True)

    proc, got, _ = run_case(tmp_path, build)
    assert proc.returncode == 0, proc.stderr  # type: ignore[attr-defined]
    assert report(proc)["files"]["imported"] == 3  # type: ignore[arg-type]
    assert got == clean_traces(tmp_path)


def test_unreadable_transcript_is_a_one_line_failure(tmp_path: Path) -> None:
    """A FIFO and a directory with a transcript's name, and a dangling link: the rest still imports.

    Tests run as root, where chmod 000 does not block reads, so unreadable
    files are simulated with things that cannot be read as files.
    """

    def build(src: Path) -> None:
        for h in HARNESSES:
            write_raw(path_for(src, h, sid_for(h)), clean_lines(h))
            os.mkfifo(path_for(src, h, sid_for(h, 1)))
            path_for(src, h, sid_for(h, 2)).mkdir()
            path_for(src, h, sid_for(h, 3)).symlink_to(tmp_path / "gone.jsonl")
            p = write_raw(path_for(src, h, sid_for(h, 4)), clean_lines(h, 4))
            p.chmod(0)

    proc, got, _src = run_case(tmp_path, build)
    rep = report(proc)  # type: ignore[arg-type]
    # The fifo is never opened (it is not a regular file): only readable files count.
    assert rep["files"]["imported"] >= 3
    assert len(got) >= 3
    assert set(clean_traces(tmp_path)) <= set(got)
    assert proc.returncode in (0, 1)  # type: ignore[attr-defined]


def test_named_file_that_is_missing_or_a_fifo(tmp_path: Path) -> None:
    """Paths named on the command line that cannot be read: a one-line failure each, exit 1."""
    good = write_raw(path_for(tmp_path / "src", "codex", sid_for("codex")), clean_lines("codex"))
    fifo = path_for(tmp_path / "src", "omp", sid_for("omp", 1))
    fifo.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(fifo)
    missing = tmp_path / "src" / "missing.jsonl"
    out = tmp_path / "data"
    proc = run_import(out, good, fifo, missing, timeout=60)
    assert_clean_stderr(proc)
    assert proc.returncode == 1
    assert f"rematch: {missing}: failed:" in proc.stderr
    assert f"rematch: {fifo}: failed:" in proc.stderr
    assert report(proc)["files"]["imported"] == 1
    assert len(traces(out)) == 1


def test_file_disappears_mid_import(tmp_path: Path) -> None:
    """A file deleted between discovery and reading fails alone; earlier output stays."""
    import rematch_claude_code
    import rematch_codex
    import rematch_omp
    import rematch_trace.importing.batch as batch
    from rematch_trace.store.datafolder import DataDir
    from rematch_trace.testing import make_host

    src = tmp_path / "src"
    files = [write_raw(path_for(src, h, sid_for(h)), clean_lines(h)) for h in HARNESSES]
    data = DataDir(tmp_path / "data")
    host = make_host([rematch_claude_code, rematch_codex, rematch_omp])
    first = batch.run_import([src], data, batch.ImportSettings(jobs=1), host=host)
    assert first.count("imported") == 3
    before = traces(data.root)
    for f in files:
        with open(f, "ab") as fh:
            fh.write(clean_lines("codex")[-1] + b"\n")
    from rematch_trace.importing import pool
    from rematch_trace.importing.outcome import FileOutcome, WorkItem

    real_open = pool.import_file

    def vanishing(item: WorkItem, *args: object, **kw: object) -> FileOutcome:
        if "omp" in item.path:
            os.unlink(item.path)
        return real_open(item, *args, **kw)  # type: ignore[arg-type]

    pool.import_file = vanishing  # type: ignore[assignment]
    try:
        second = batch.run_import([src], data, batch.ImportSettings(jobs=1), host=host)
    finally:
        pool.import_file = real_open
    outcomes = {Path(f.path).parts[-4]: f.outcome for f in second.files}
    omp = next(f for f in second.files if "omp" in f.path)
    assert omp.outcome == "failed" and omp.reason and "no such file" in omp.reason.lower()
    assert sum(1 for f in second.files if f.outcome in ("imported", "resumed")) == 2, outcomes
    after = traces(data.root)
    omp_trace = f"{sid_for('omp')}.jsonl"
    assert after[omp_trace] == before[omp_trace]  # the failed file's earlier session is kept
    with sqlite3.connect(data.ledger) as db:
        n = db.execute("SELECT count(*) FROM sessions").fetchone()[0]
    assert n == 3
    shutil.rmtree(src)


def test_damaged_archives(tmp_path: Path) -> None:
    """Cut-off, corrupt and bomb-like .gz / .zst transcripts: one line each, what was readable imports."""
    import gzip

    import zstandard

    suffix = {"claude_code": ".gz", "codex": ".zst", "omp": ".gz"}
    cut_paths: dict[str, Path] = {}

    def compress(h: str, body: bytes) -> bytes:
        return gzip.compress(body) if suffix[h] == ".gz" else zstandard.ZstdCompressor().compress(body)

    def build(src: Path) -> None:
        for h in HARNESSES:
            body = b"".join(x + b"\n" for x in clean_lines(h, 1))
            packed = compress(h, body)
            cut = Path(str(path_for(src, h, sid_for(h, 1))) + suffix[h])
            cut.parent.mkdir(parents=True, exist_ok=True)
            cut.write_bytes(packed[: len(packed) * 3 // 4])  # cut off mid-stream
            cut_paths[h] = cut
            magic = b"\x1f\x8b\x08\x00" if suffix[h] == ".gz" else b"\x28\xb5\x2f\xfd"
            Path(str(path_for(src, h, sid_for(h, 2))) + suffix[h]).write_bytes(magic + os.urandom(400))
            Path(str(path_for(src, h, sid_for(h, 3))) + suffix[h]).write_bytes(compress(h, body) + b"trailing junk")
            write_raw(path_for(src, h, sid_for(h)), clean_lines(h))

    proc, got, _ = run_case(tmp_path, build)
    rep = report(proc)  # type: ignore[arg-type]
    assert rep["files"]["failed"] == 0, rep["failures"]
    assert proc.returncode == 1  # data was lost: said so
    for h in HARNESSES:
        assert f"rematch: {cut_paths[h]}: cannot decompress" in proc.stderr  # type: ignore[attr-defined]
    # Random bytes behind the magic number are not claimed (skipped), or reported when claimed.
    assert rep["files"]["skipped"] + rep["files"]["imported"] == 4 * len(HARNESSES)
    # The plain transcripts beside them imported as always.
    clean = clean_traces(tmp_path)
    for name, body in clean.items():
        assert got[name] == body
