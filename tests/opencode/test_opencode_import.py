"""The opencode plugin through the real core: the contract kit, both storage shapes, continuation.

Fixtures of our own: a session tree as opencode before its database wrote it (two sessions, the
second a subagent of the first; an assistant message of two steps; a shell that exits non-zero,
a read that failed, a task), and the same sessions as a database (``oc_build``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from oc_build import TREE, add_message, copy_tree, database_from_tree, read_jsonl, rematch, session_files

import rematch_opencode
from rematch_trace.testing import check_plugin

MAIN = "ses_0a0000000001AAAAAAAAAAAAAA"
SUB = "ses_0a0000000002BBBBBBBBBBBBBB"


def _traces(out: Path) -> dict[str, list[dict[str, Any]]]:
    return {p.stem: read_jsonl(p) for p in sorted((out / "traces").glob("*.jsonl"))}


def test_contract_kit_passes_for_the_tree_and_the_database(tmp_path: Path) -> None:
    """check_plugin over both session files of the tree and over the database made from them."""
    tree = copy_tree(tmp_path / "tree")
    sessions = check_plugin(rematch_opencode, session_files(tree), out=tmp_path / "o1")
    assert sorted(s.session_id for s in sessions) == [MAIN, SUB]
    database_from_tree(tree, tmp_path / "db" / "opencode.db" if (tmp_path / "db").mkdir() is None else tmp_path).close()
    sessions = check_plugin(rematch_opencode, [tmp_path / "db" / "opencode.db"], out=tmp_path / "o2")
    assert sorted(s.session_id for s in sessions) == [MAIN, SUB]


def test_tree_translates_steps_errors_and_the_subagent(tmp_path: Path) -> None:
    """The tree's main session: two inputs (the synthetic part left out), three tool results in
    order (make's exit 2 an exit_nonzero error, the missing file an error), one turn per step
    with that step's usage; the subagent's trace is of kind sub and its events name the parent.
    The session's diff file (``storage/session_diff``) is claimed, not reported as unknown."""
    res = rematch(tmp_path, "import", str(TREE), "--out", str(tmp_path / "out"), "-j", "1")
    assert res.returncode == 0 and " 0 skipped, 0 failed" in res.stdout, res.stdout + res.stderr
    traces = _traces(tmp_path / "out")
    main, sub = traces[MAIN], traces[SUB]
    assert [r["text"] for r in main if r["ev"] == "input"] == ["Run the tests, then look around.", "Thanks. Summarise."]
    results = [r for r in main if r["ev"] == "tool_result"]
    assert [(r["call_id"], r["tool"], r["is_error"], r["error_class"]) for r in results] == [
        ("toolu_01", "bash", True, "exit_nonzero"), ("toolu_02", "task", False, None),
        ("toolu_03", "read", True, "not_found")]
    turns = [r for r in main if r["ev"] == "turn_end"]
    assert [t["usage"]["input"] for t in turns] == [150, 150, 400]
    assert turns[0]["model"] == {"provider": "anthropic", "id": "claude-sonnet-4"}
    assert main[0]["omp_version"] == "0.15.8" and main[0]["cwd"] == "/work/demo"
    assert sub[0]["agent"]["kind"] == "sub" and [r["tool"] for r in sub if r["ev"] == "tool_result"] == ["bash"]
    events = read_jsonl(tmp_path / "out" / "events" / f"{SUB}.jsonl")
    assert events and {e["source_session_id"] for e in events} == {MAIN}


def test_database_gives_the_traces_the_tree_gives(tmp_path: Path) -> None:
    """The same sessions stored either way import to the same trace records."""
    (tmp_path / "db").mkdir()
    database_from_tree(TREE, tmp_path / "db" / "opencode.db").close()
    for name, src in (("tree", TREE), ("db", tmp_path / "db")):
        res = rematch(tmp_path, "import", str(src), "--out", str(tmp_path / name), "-j", "1")
        assert res.returncode == 0 and " 0 skipped, 0 failed" in res.stdout, res.stdout + res.stderr
    assert _traces(tmp_path / "tree") == _traces(tmp_path / "db")


def test_a_tree_beside_a_database_is_not_read_twice(tmp_path: Path) -> None:
    """opencode migrated the tree into the database: only the database is claimed."""
    copy_tree(tmp_path / "data")
    database_from_tree(TREE, tmp_path / "data" / "opencode.db").close()
    res = rematch(tmp_path, "import", str(tmp_path / "data"), "--out", str(tmp_path / "out"), "-j", "1")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "2 sessions imported from 4 files" in res.stdout and " 0 skipped" in res.stdout, res.stdout


def _new_turn(sid: str, n: int) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
    t = 1760000100000 + n * 1000
    user = {"id": f"msg_0a00000090{n:02d}01", "sessionID": sid, "role": "user", "time": {"created": t}}
    uparts = [{"id": f"prt_0a00000090{n:02d}01", "messageID": user["id"], "sessionID": sid, "type": "text",
               "text": f"Follow-up {n}."}]
    asst = {"id": f"msg_0a00000090{n:02d}02", "sessionID": sid, "role": "assistant", "modelID": "m", "providerID": "p",
            "time": {"created": t + 1}, "tokens": {"input": 5, "output": 1, "reasoning": 0, "cache": {"read": 0, "write": 0}}}
    aparts = [{"id": f"prt_0a00000090{n:02d}02", "messageID": asst["id"], "sessionID": sid, "type": "text", "text": "Done."}]
    return user, uparts, asst, aparts


def _write_tree_message(root: Path, msg: dict[str, Any], parts: list[dict[str, Any]]) -> None:
    mdir = root / "storage" / "message" / msg["sessionID"]
    for p in parts:
        pdir = root / "storage" / "part" / msg["id"]
        pdir.mkdir(parents=True, exist_ok=True)
        (pdir / f"{p['id']}.json").write_text(json.dumps(p))
    (mdir / f"{msg['id']}.json").write_text(json.dumps(msg))


def test_tree_session_is_continued_and_an_unfinished_message_waits(tmp_path: Path) -> None:
    """Unchanged: nothing read. A new prompt whose answer opencode is still writing: the session is
    continued, the prompt imported, the answer held back; once completed, continued again with it.
    The result equals a fresh import of the finished tree."""
    root = copy_tree(tmp_path / "data")
    out = tmp_path / "out"
    assert rematch(tmp_path, "import", str(root), "--out", str(out), "-j", "1").returncode == 0
    res = rematch(tmp_path, "import", str(root), "--out", str(out), "-j", "1")
    assert "3 unchanged" in res.stdout, res.stdout  # two sessions and a diff file
    user, uparts, asst, aparts = _new_turn(MAIN, 1)
    _write_tree_message(root, user, uparts)
    _write_tree_message(root, asst, aparts)  # no time.completed: still being written
    res = rematch(tmp_path, "import", str(root), "--out", str(out), "-j", "1")
    assert "(1 continued)" in res.stdout and " 0 failed" in res.stdout, res.stdout + res.stderr
    main = _traces(out)[MAIN]
    assert [r["text"] for r in main if r["ev"] == "input"][-1] == "Follow-up 1."
    assert not any(r.get("text_head") == "Done." for r in main)
    asst["time"]["completed"] = asst["time"]["created"] + 5
    _write_tree_message(root, asst, aparts)
    res = rematch(tmp_path, "import", str(root), "--out", str(out), "-j", "1")
    assert "(1 continued)" in res.stdout, res.stdout + res.stderr
    fresh = tmp_path / "fresh"
    assert rematch(tmp_path, "import", str(root), "--out", str(fresh), "-j", "1").returncode == 0
    assert _traces(out) == _traces(fresh)


def test_database_is_continued_read_only_while_a_writer_holds_a_transaction(tmp_path: Path) -> None:
    """A new turn committed: continued (not read whole), equal to a fresh import. A turn inside a
    write transaction still open: the import runs (never waits on or blocks the writer), sees only
    what was committed, and the writer commits afterwards; the database file never gains a byte
    from rematch (read-only)."""
    (tmp_path / "data").mkdir()
    db = tmp_path / "data" / "opencode.db"
    con = database_from_tree(TREE, db)
    out = tmp_path / "out"
    assert rematch(tmp_path, "import", str(tmp_path / "data"), "--out", str(out), "-j", "1").returncode == 0
    user, uparts, asst, aparts = _new_turn(SUB, 2)
    asst["time"]["completed"] = asst["time"]["created"] + 5
    add_message(con, user, uparts)
    add_message(con, asst, aparts)
    res = rematch(tmp_path, "import", str(tmp_path / "data"), "--out", str(out), "-j", "1")
    assert "(1 continued)" in res.stdout and " 0 failed" in res.stdout, res.stdout + res.stderr
    fresh = tmp_path / "fresh"
    assert rematch(tmp_path, "import", str(tmp_path / "data"), "--out", str(fresh), "-j", "1").returncode == 0
    assert _traces(out) == _traces(fresh)
    con.execute("BEGIN IMMEDIATE")
    user3, uparts3, _, _ = _new_turn(SUB, 3)
    add_message(con, user3, uparts3)
    res = rematch(tmp_path, "import", str(tmp_path / "data"), "--out", str(tmp_path / "during"), "-j", "1")
    assert res.returncode == 0 and " 0 failed" in res.stdout, res.stdout + res.stderr
    assert "Follow-up 3." not in json.dumps(_traces(tmp_path / "during")[SUB])
    con.execute("COMMIT")
    assert con.execute("SELECT count(*) FROM message WHERE session_id = ?", (SUB,)).fetchone()[0] == 5
    con.close()


def test_damaged_records_are_counted_not_dropped_silently(tmp_path: Path) -> None:
    """A message file that is not JSON is a skipped record the import reports (exit 1 not required:
    the summary counts it)."""
    root = copy_tree(tmp_path / "data")
    bad = next((root / "storage" / "message" / SUB).glob("*.json"))
    bad.write_text("{not json")
    res = rematch(tmp_path, "import", str(root), "--out", str(tmp_path / "out"), "-j", "1")
    assert "message file" in res.stdout + res.stderr, res.stdout + res.stderr


def test_classify_action_types_opencode_tools() -> None:
    """The action types of opencode's built-in tools."""
    from rematch_opencode.actions import classify

    assert [classify(t) for t in ("bash", "read", "write", "edit", "task", "webfetch", "mymcp_tool")] == [
        "shell_exec", "file_read", "file_write", "file_edit", "subagent", "network", "other"]


def test_default_locations_honour_xdg_and_opencode_db(tmp_path: Path) -> None:
    """``$XDG_DATA_HOME/opencode``, else ``~/.local/share/opencode``; ``$OPENCODE_DB``'s folder too."""
    from rematch_opencode.where import data_folders

    assert data_folders({}, tmp_path) == [tmp_path / ".local" / "share" / "opencode"]
    assert data_folders({"XDG_DATA_HOME": "/x", "OPENCODE_DB": "/y/o.db"}, tmp_path) == [
        Path("/x/opencode"), Path("/y")]



def test_a_user_with_only_opencode_imports_searches_reports_and_checks(tmp_path: Path) -> None:
    """Only this plugin loaded, opencode's database in its default folder: ``rematch import`` with no
    path finds it; ``doctor`` names opencode among the plugins it did not check hooks for (and not
    plugins that are not loaded); ``search`` finds a tool input; ``report`` and ``flagged`` run."""
    folder = tmp_path / ".local" / "share" / "opencode"
    folder.mkdir(parents=True)
    database_from_tree(TREE, folder / "opencode.db").close()
    res = rematch(tmp_path, "import", only="opencode")
    assert res.returncode == 0 and "2 sessions imported from 1 files" in res.stdout, res.stdout + res.stderr
    doctor = rematch(tmp_path, "doctor", only="opencode")
    line = next(x for x in doctor.stdout.splitlines() if x.startswith("hooks"))
    assert "opencode: imported" in line and "codex" not in line, doctor.stdout
    found = rematch(tmp_path, "search", "make test", only="opencode")
    assert found.returncode == 0 and MAIN in found.stdout, found.stdout + found.stderr
    for args in (("report",), ("flagged",)):
        out = rematch(tmp_path, *args, only="opencode")
        assert out.returncode in (0, 1) and "Traceback" not in out.stderr, out.stdout + out.stderr


def test_watch_follows_rows_added_to_the_database(tmp_path: Path) -> None:
    """``rematch watch`` on opencode's folder: a turn committed to the database (its write-ahead log:
    the database file itself need not change) reaches the subagent's trace, continued."""
    import os
    import signal
    import subprocess
    import time

    from oc_build import REMATCH

    folder = tmp_path / "data"
    folder.mkdir()
    con = database_from_tree(TREE, folder / "opencode.db")
    con.execute("PRAGMA wal_autocheckpoint = 0")  # the rows stay in the log, as between opencode's checkpoints
    out = tmp_path / "out"
    log = tmp_path / "watch.log"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    with open(log, "wb") as err:
        proc = subprocess.Popen([*REMATCH, "watch", str(folder), "--out", str(out), "-v"], stdout=subprocess.DEVNULL,
                                stderr=err, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while "watching 1 of" not in log.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.05)
        user, uparts, asst, aparts = _new_turn(SUB, 4)
        asst["time"]["completed"] = asst["time"]["created"] + 5
        size = os.path.getsize(folder / "opencode.db")
        add_message(con, user, uparts)
        add_message(con, asst, aparts)
        assert os.path.getsize(folder / "opencode.db") == size
        trace = out / "traces" / f"{SUB}.jsonl"
        while time.monotonic() < deadline and "Follow-up 4." not in (trace.read_text() if trace.exists() else ""):
            time.sleep(0.1)
        assert "Follow-up 4." in trace.read_text(), log.read_text()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
        con.close()


def test_a_database_continuation_reads_only_rows_updated_since_its_watermark(tmp_path: Path) -> None:
    """From the watermark of a full read, a read gives no message while nothing changed (only the
    session updated at the watermark itself: a row of the same millisecond is read again), then
    after a turn added to the subagent's session only its two new messages."""
    from rematch_opencode.store import read_database

    con = database_from_tree(TREE, tmp_path / "opencode.db")
    full = list(read_database(tmp_path / "opencode.db"))
    assert [r.value["kind"] for r in full].count("message") == 6
    mark = full[-1].end
    assert all(r.end == mark for r in full) and mark >= 1760000009000
    assert [(r.value["kind"], r.value["session"]["id"]) for r in read_database(tmp_path / "opencode.db", mark)] == [
        ("session", MAIN)]
    user, uparts, asst, aparts = _new_turn(SUB, 5)
    asst["time"]["completed"] = asst["time"]["created"] + 5
    add_message(con, user, uparts)
    add_message(con, asst, aparts)
    con.close()
    again = list(read_database(tmp_path / "opencode.db", mark))
    assert [(r.value["kind"], r.value.get("message", r.value.get("session"))["id"]) for r in again] == [
        ("session", MAIN), ("session", SUB), ("message", user["id"]), ("message", asst["id"])]
    assert again[-1].end > mark


def test_a_database_written_just_before_its_import_is_unchanged_on_the_next_run(tmp_path: Path) -> None:
    """Issue 43: a database (with its members) written less than a second before the first import is not
    taken for changed on the next run: its sub-second mtimes say it was not touched after the import read it."""
    import os
    import time

    home = tmp_path / "home"
    (tmp_path / "db").mkdir()
    database_from_tree(TREE, tmp_path / "db" / "opencode.db").close()
    now = time.time_ns()
    for p in (tmp_path / "db").iterdir():
        os.utime(p, ns=(now, now))  # as a plain copy leaves them: written just now
    data = tmp_path / "data"
    first = rematch(home, "import", str(tmp_path / "db"), "--data", str(data), only="opencode")
    assert first.returncode == 0 and "sessions imported from 1 files" in first.stdout, first.stdout + first.stderr
    again = rematch(home, "import", str(tmp_path / "db"), "--data", str(data), only="opencode")
    assert again.returncode == 0, again.stderr
    assert "0 sessions imported from 0 files (0 continued), 1 unchanged" in again.stdout, again.stdout
