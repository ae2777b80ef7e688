"""``rematch watch`` as a user runs it: a real process following a temporary home's three harnesses.

Each test ends by comparing the watcher's data folder with a batch import of
the final files: the same traces, events, flag files and ledger rows.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from watch_helpers import (
    Home,
    Watch,
    append,
    assert_same_as_batch,
    batch_import,
    ledger_rows,
    settled,
    wait_settled,
)

HARNESSES = ("claude_code", "codex", "omp")


def outcome_of(out: Path, path: Path) -> str:
    rows = ledger_rows(out, "SELECT outcome FROM sources WHERE path = ?", (str(path),))
    return str(rows[0][0]) if rows else ""


@pytest.mark.parametrize("mode", ["events", "poll"])
def test_appends_reach_the_traces_as_a_batch_import_would_write_them(tmp_path: Path, mode: str) -> None:
    home = Home(tmp_path)
    out, ref = tmp_path / "out", tmp_path / "ref"
    lines = {h: home.lines(h, turns=4) for h in HARNESSES}
    paths = {h: home.path(h) for h in HARNESSES}
    # One session exists before the watch starts: the catch-up imports it.
    append(paths["claude_code"], b"".join(lines["claude_code"][:4]))
    watch = Watch(home, out, *(["--poll"] if mode == "poll" else []))
    try:
        watch.wait_for("watching 1 of")
        wait_settled(out, [paths["claude_code"]], watch=watch)

        # New files in folders that do not exist yet (Codex's dated folder, omp's
        # first session), then line by line and in bursts of several writes.
        for h in HARNESSES:
            for i in range(4 if h == "claude_code" else 0, 7):
                append(paths[h], lines[h][i])
            wait_settled(out, [paths[h]], watch=watch)
        for burst in range(3):
            for h in HARNESSES:
                for line in lines[h][7 + burst * 3: 10 + burst * 3]:
                    append(paths[h], line)  # three writes in a row: one continuation
        wait_settled(out, list(paths.values()), watch=watch)
        assert all(outcome_of(out, p) == "resumed" for p in paths.values())

        # A half-written last line is left for the next write, without a word.
        cc = paths["claude_code"]
        before = cc.stat().st_size
        line = lines["claude_code"][16]
        append(cc, line[:25])
        deadline = time.monotonic() + 30
        while not settled(out, cc, offset=before):
            assert time.monotonic() < deadline, ledger_rows(out, "SELECT size, offset FROM sources")
            time.sleep(0.01)
        append(cc, line[25:])
        wait_settled(out, [cc], watch=watch)
        assert "truncated last line" not in watch.stderr

        # A rewound session (cut short in place) and a replaced one (a new file renamed
        # over it, as a compaction writes it) are imported whole.
        cx = paths["codex"]
        with open(cx, "r+b") as f:
            f.truncate(sum(len(x) for x in lines["codex"][:5]))
        wait_settled(out, [cx], watch=watch)
        assert outcome_of(out, cx) == "imported"
        omp = paths["omp"]
        tmp = omp.with_name(".compacting")
        tmp.write_bytes(b"".join(home.lines("omp", turns=2)))
        os.replace(tmp, omp)
        wait_settled(out, [omp], watch=watch)
        assert outcome_of(out, omp) == "imported"

        # The rest of every session.
        for line in lines["claude_code"][17:]:
            append(cc, line)
        for line in lines["codex"][5:]:
            append(cx, line)
        for line in home.lines("omp", turns=4)[len(home.lines("omp", turns=2)):]:
            append(omp, line)
        wait_settled(out, list(paths.values()), watch=watch)
    finally:
        code = watch.stop(signal.SIGTERM)
    assert code == 0, watch.stderr
    assert "stopped (SIGTERM)" in watch.stderr
    assert "Traceback" not in watch.stderr and "internal error" not in watch.stderr, watch.stderr
    assert_same_as_batch(home, out, ref)
    # The lock went with the watcher, and its ledger is current: an import finds nothing to do.
    again = batch_import(home, out)
    assert again.returncode == 0, again.stderr
    assert '"imported": 0' in again.stdout and '"resumed": 0' in again.stdout and '"unchanged": 3' in again.stdout


def test_killed_mid_update_the_next_start_settles_the_files(tmp_path: Path) -> None:
    home = Home(tmp_path)
    out, ref = tmp_path / "out", tmp_path / "ref"
    cc = home.path("claude_code")
    lines = home.lines("claude_code", turns=6000)
    chunk = len(lines) // 6
    append(cc, b"".join(lines[:chunk]))
    journal = out / "journal"
    caught = False
    pos = chunk
    while pos < len(lines) and not caught:
        watch = Watch(home, out)
        watch.wait_for("watching 1 of")
        wait_settled(out, [cc], watch=watch)
        # A few MB appended at once: the continuation runs long enough to be killed in its middle.
        append(cc, b"".join(lines[pos:pos + chunk]))
        pos += chunk
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not caught:
            caught = any(p.stat().st_size for p in journal.glob("*.jsonl"))
            if settled(out, cc):
                break
        if caught:
            watch.proc.kill()  # SIGKILL: the continuation is half-written, its journal entry stands
        assert watch.stop() in (0, -signal.SIGKILL), watch.stderr
    assert caught, "no continuation was ever caught in its middle"
    # The next start rolls the half-written continuation back and does it again.
    watch = Watch(home, out)
    try:
        watch.wait_for("watching 1 of")
        append(cc, b"".join(lines[pos:]))
        wait_settled(out, [cc], watch=watch)
    finally:
        assert watch.stop() == 0, watch.stderr
    assert not any(journal.glob("*.jsonl"))
    assert_same_as_batch(home, out, ref)


def test_a_second_watcher_and_an_import_are_refused_naming_the_watcher(tmp_path: Path) -> None:
    home = Home(tmp_path)
    out = tmp_path / "out"
    for h in HARNESSES:
        append(home.path(h), b"".join(home.lines(h)))
    first = Watch(home, out)
    try:
        first.wait_for("watching 3 of")
        second = Watch(home, out)
        assert second.proc.wait(60) == 1
        second.stop()
        said = second.stderr.strip().splitlines()
        assert len(said) == 1 and f"rematch watch (pid {first.proc.pid}) holds {out}" in said[0], said
        proc = batch_import(home, out)
        assert proc.returncode == 2  # a held lock is fatal (the README's exit statuses)
        assert f"rematch watch (pid {first.proc.pid}) holds {out}" in proc.stderr
        assert "Traceback" not in proc.stderr
        assert first.proc.poll() is None  # the watcher goes on
        # ...and still follows.
        append(home.path("omp"), home.lines("omp", turns=4)[-1])
        wait_settled(out, [home.path("omp")], watch=first)
    finally:
        assert first.stop(signal.SIGINT) == 0, first.stderr
    assert "stopped (SIGINT)" in first.stderr
    assert batch_import(home, out).returncode == 0


def test_sigterm_amid_a_stream_of_writes_stops_cleanly_and_keeps_every_finished_import(tmp_path: Path) -> None:
    home = Home(tmp_path)
    out, ref = tmp_path / "out", tmp_path / "ref"
    paths = {h: home.path(h) for h in HARNESSES}
    lines = {h: home.lines(h, turns=40) for h in HARNESSES}
    for h in HARNESSES:
        append(paths[h], lines[h][0])
    watch = Watch(home, out)
    watch.wait_for("watching 3 of")
    sent = None
    for i in range(1, 120):
        for h in HARNESSES:
            if i < len(lines[h]):
                append(paths[h], lines[h][i])
        if i == 60:
            watch.proc.send_signal(signal.SIGTERM)
            sent = time.monotonic()
        time.sleep(0.005)
    assert sent is not None
    code = watch.stop(timeout=30)
    assert code == 0, watch.stderr
    assert "stopped (SIGTERM)" in watch.stderr and "Traceback" not in watch.stderr, watch.stderr
    # Whatever it had not finished, an import finishes: the outputs of a batch import.
    proc = batch_import(home, out)
    assert proc.returncode == 0, proc.stderr
    assert_same_as_batch(home, out, ref)


def test_a_named_file_replaced_by_rename_is_followed_in_its_new_inode(tmp_path: Path) -> None:
    home = Home(tmp_path)
    out, ref = tmp_path / "out", tmp_path / "ref"
    target = tmp_path / "elsewhere" / "session.jsonl"
    lines = home.lines("omp", turns=6)
    append(target, b"".join(lines[:6]))
    watch = Watch(home, out, str(target))
    try:
        watch.wait_for("watching 1 of 1")
        wait_settled(out, [target], watch=watch)
        tmp = target.with_name("session.tmp")
        tmp.write_bytes(b"".join(lines[:4]))
        os.replace(tmp, target)  # the watched inode is gone
        wait_settled(out, [target], watch=watch)
        assert outcome_of(out, target) == "imported"
        for line in lines[4:]:
            append(target, line)
        wait_settled(out, [target], watch=watch)
        assert outcome_of(out, target) == "resumed"
    finally:
        assert watch.stop() == 0, watch.stderr
    assert_same_as_batch(home, out, ref, target)
