"""The conversation of Gemini CLI and opencode sessions through the real CLI (``rematch import``, then ``rematch
show --conversation`` in JSON and Markdown, and ``rematch search``), on the plugins' fixtures: the log and the
document of Gemini CLI, the tree and the database of opencode. Their subagents nested under the call that
started them, an assistant phrase past the trace's head and a tool output's word found by search, and planted
secrets in a tool output shown and indexed nowhere."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "opencode"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
from oc_build import TREE, database_from_tree
from page_check import page_text

GEMINI = Path(__file__).resolve().parent.parent / "gemini_cli" / "fixtures"
LOG = GEMINI / "session-2026-12-01T18-35-c0445b57.jsonl"
DOC = GEMINI / "session-2025-06-30T10-02-5f0c2a7e.json"
GEMINI_IDS = {LOG.name: "c0445b57-e67b-480d-ab1d-9ee42e0a88f2", DOC.name: "5f0c2a7e-1111-4c2d-9e7f-0123456789ab"}
OC_MAIN, OC_SUB = "ses_0a0000000001AAAAAAAAAAAAAA", "ses_0a0000000002BBBBBBBBBBBBBB"
#: Secrets planted in a tool output (an AWS key id and a GitHub token): never shown, never indexed.
SECRETS = ("AKIAQ3EGRTYU7ZXCVBNM", "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5")
#: A word said only at the end of a long assistant text (past the 2 KB head the trace keeps).
SAID = "zanzibarfinale"
#: A word only in a tool output (the trace keeps an output's size and head, which search does not index).
SHOWN = "quokkaoutput"
LONG = "The work went as follows. " * 100 + f"In short: {SAID}."


def rematch(*args: str) -> subprocess.CompletedProcess[str]:
    """``rematch`` as a user runs it, with the Gemini CLI and opencode plugins."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REMATCH_", "PYTEST_"))}
    env["REMATCH_LOAD_PLUGINS"] = "gemini_cli,opencode"
    return subprocess.run([sys.executable, "-m", "rematch_trace.cli", *args], capture_output=True, text=True,
                          env=env, timeout=120, errors="replace")


def ok(*args: str) -> str:
    res = rematch(*args)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def conversation(data: Path, sid: str) -> dict[str, Any]:
    got = orjson.loads(ok("show", sid, "--data", str(data), "--conversation", "--format", "json"))
    assert isinstance(got, dict)
    return got


def search(data: Path, query: str) -> list[dict[str, Any]]:
    res = rematch("search", query, "--data", str(data), "--json", "--limit", "100")
    hits = orjson.loads(res.stdout)
    assert isinstance(hits, list)
    assert res.returncode == (0 if hits else 1), res.stderr  # no hit exits 1, --json too
    return hits


def kinds(conv: dict[str, Any]) -> list[str]:
    return [e["kind"] for e in conv["entries"]]


def _calls(conv: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in conv["entries"] if e["kind"] == "call"]


@pytest.mark.parametrize("name", sorted(GEMINI_IDS))
def test_gemini_cli_log_and_document_show_their_conversation(name: str, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    shutil.copyfile(GEMINI / name, src / name)
    data = tmp_path / "data"
    ok("import", str(src), "--data", str(data), "-q")
    sid = GEMINI_IDS[name]
    conv = conversation(data, sid)
    assert conv["status"] == "ok" and conv["note"] == "" and conv["harness"] == "gemini_cli"
    entries = conv["entries"]
    assert entries[0]["kind"] == "prompt" and entries[0]["text"] == "Use the tools. [rig:tools]"
    assert isinstance(entries[0]["seq"], int)
    calls = _calls(conv)
    assert [c["tool"] for c in calls] == ["run_shell_command", "run_shell_command", "write_file", "read_file",
                                          "replace"]
    # Each call has its whole output from the source, its input, its trace seq; the failed ls is an error.
    assert all(c["output"] for c in calls) and all(isinstance(c["seq"], int) for c in calls)
    assert calls[1]["input"] == {"command": "ls /nonexistent-rig-dir"} and calls[1]["is_error"] is True
    assert "No such file or directory" in calls[1]["output"] and calls[3]["output"] == "alpha\nbeta\n"
    assert not calls[3]["is_error"]
    # The answer comes after the calls it followed, once (a log restates a message by its id).
    assert kinds(conv)[-1] == "assistant" and entries[-1]["text"] == "Tools done."
    assert kinds(conv).count("assistant") == 1 and len(calls) == kinds(conv).count("call")
    md = ok("show", sid, "--data", str(data), "--format", "markdown")
    assert md.startswith(f"# gemini_cli session {sid}") and "## User" in md and "## Tool `replace`" in md
    assert "alpha\ngamma" in md and "Tools done." in md
    assert "no conversation from this plugin" not in ok("show", sid, "--data", str(data), "--conversation")


def _opencode_tree(into: Path) -> Path:
    shutil.copytree(TREE, into, dirs_exist_ok=True)
    return into


@pytest.mark.parametrize("shape", ["tree", "database"])
def test_opencode_tree_and_database_show_their_conversation_with_the_subagent_nested(shape: str,
                                                                                      tmp_path: Path) -> None:
    tree = _opencode_tree(tmp_path / "tree")
    src = tree
    if shape == "database":
        src = tmp_path / "db"
        src.mkdir()
        database_from_tree(tree, src / "opencode.db").close()
    data = tmp_path / "data"
    ok("import", str(src), "--data", str(data), "-q")
    conv = conversation(data, OC_MAIN)
    assert conv["status"] == "ok" and conv["harness"] == "opencode"
    # The parts in their order: the step's text before the calls it was written before.
    assert kinds(conv) == ["prompt", "assistant", "call", "call", "call", "prompt", "assistant"]
    entries = conv["entries"]
    assert [e["text"] for e in entries if e["kind"] == "prompt"] == ["Run the tests, then look around.",
                                                                     "Thanks. Summarise."]
    bash, task, read = _calls(conv)
    assert bash["output"] == "make: *** No rule to make target 'test'.  Stop.\n" and bash["is_error"]
    assert bash["error_class"] == "exit_nonzero" and bash["input"]["command"] == "make test"
    assert read["is_error"] and read["output"] == "Error: File not found: /work/demo/missing.txt"
    # The task call's subagent: its conversation nested under it, and its page links back to the call.
    sub = task["subagent"]
    assert sub["session_id"] == OC_SUB and sub["key"]
    nested = sub["conversation"]
    assert [e["kind"] for e in nested["entries"]] == ["prompt", "call", "assistant"]
    assert nested["entries"][1]["output"] == "a.txt\nb.txt\n"
    back = conversation(data, OC_SUB)
    assert back["parent"] == {"session_id": OC_MAIN, "key": conv["key"], "call_id": "toolu_02"}
    md = ok("show", OC_MAIN, "--data", str(data), "--format", "markdown")
    assert "## Tool `task`" in md and "No rule to make target" in md and "The build has no test target." in md


def _plant_gemini(src: Path) -> None:
    """The log with a long final answer and a read whose output holds the planted word and secrets."""
    text = LOG.read_text()
    shown = f"alpha {SHOWN} {SECRETS[0]}\\ntoken={SECRETS[1]}\\n"
    assert text.count('"output":"alpha\\nbeta\\n"') == 2  # the call's result and its functionResponse message
    text = text.replace('"output":"alpha\\nbeta\\n"', f'"output":"{shown}"')
    assert text.count('"content":"Tools done."') >= 1
    text = text.replace('"content":"Tools done."', '"content":' + orjson.dumps(LONG).decode())
    src.mkdir()
    (src / LOG.name).write_text(text)


def _plant_opencode(src: Path) -> None:
    """The tree with a long final answer and a subagent's output holding the planted word and secrets."""
    _opencode_tree(src)
    part = src / "storage" / "part" / "msg_0a0000004001" / "prt_0a0000004002.json"
    doc = orjson.loads(part.read_bytes())
    doc["text"] = LONG
    part.write_bytes(orjson.dumps(doc))
    part = src / "storage" / "part" / "msg_0a0000006001" / "prt_0a0000006002.json"
    doc = orjson.loads(part.read_bytes())
    doc["state"]["output"] = f"a.txt {SHOWN}\nkey {SECRETS[0]}\ntoken={SECRETS[1]}\n"
    part.write_bytes(orjson.dumps(doc))


@pytest.mark.parametrize("redact", [True, False], ids=["redacted-import", "no-redact-import"])
@pytest.mark.parametrize("harness", ["gemini_cli", "opencode"])
def test_search_finds_assistant_text_and_tool_output_never_a_planted_secret(harness: str, redact: bool,
                                                                             tmp_path: Path) -> None:
    src = tmp_path / "src"
    (_plant_gemini if harness == "gemini_cli" else _plant_opencode)(src)
    data = tmp_path / "data"
    ok("import", str(src), "--data", str(data), "-q", *(() if redact else ("--no-redact",)))
    said = search(data, SAID)
    assert said and {h["kind"] for h in said} == {"assistant"} and {h["harness"] for h in said} == {harness}
    shown = search(data, SHOWN)
    assert shown and {h["kind"] for h in shown} == {"output"}
    assert all(isinstance(h["seq"], int) for h in shown)  # the hit names its call's seq in the trace
    for secret in SECRETS:
        assert search(data, f'"{secret}"') == []
    # Nor does any view show them: the conversation in JSON and Markdown, the index's bytes.
    sid = GEMINI_IDS[LOG.name] if harness == "gemini_cli" else OC_SUB
    views = [ok("show", sid, "--data", str(data), "--conversation", "--format", "json"),
             ok("show", sid, "--data", str(data), "--format", "markdown"),
             ok("show", sid, "--data", str(data), "--conversation")]
    assert SHOWN in views[0] and SHOWN in views[1]
    report = tmp_path / "report"
    ok("report", "--data", str(data), "--out", str(report))
    page = page_text(report / "sessions" / f"{sid}.html")
    # The report's conversation section (the timeline shows the trace as the import kept it).
    section = page[page.index('<section class="conversation"'):page.index('<section class="timeline"')]
    assert SHOWN in section
    views.append(section if not redact else page)
    with sqlite3.connect(data / "search.sqlite") as db:
        bodies = "\n".join(r[0] for r in db.execute("SELECT body FROM text"))
    for secret in SECRETS:
        assert all(secret not in v for v in views) and secret not in bodies


def test_a_grown_gemini_log_resumed_indexes_no_answer_twice(tmp_path: Path) -> None:
    """A resume restates the whole history in a ``$set`` of messages: the search index, reading the grown
    log on from where it stopped, indexes only what is new (each answer once), and finds the new answer."""
    lines = LOG.read_text().splitlines(keepends=True)
    records = [orjson.loads(line) for line in lines]
    history = {r["id"]: r for r in records if isinstance(r.get("id"), str)}
    resume = [orjson.dumps(records[0]).decode() + "\n",
              orjson.dumps({"$set": {"messages": list(history.values())}}).decode() + "\n"]
    later = [orjson.dumps({"id": "u-next", "timestamp": "2026-12-01T18:40:00.000Z", "type": "user",
                           "content": [{"text": "Next."}]}).decode() + "\n",
             orjson.dumps({"id": "g-next", "timestamp": "2026-12-01T18:40:01.000Z", "type": "gemini",
                           "content": "Finished the flamingo.", "tokens": {"input": 9, "output": 2, "total": 11},
                           "model": "gemini-2.5-flash"}).decode() + "\n"]
    src = tmp_path / "src"
    src.mkdir()
    path = src / LOG.name
    path.write_text("".join(lines))
    data = tmp_path / "data"
    ok("import", str(src), "--data", str(data), "-q")
    path.write_text("".join(lines + resume + later))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    ok("import", str(src), "--data", str(data), "-q")
    assert [h["kind"] for h in search(data, '"Tools done"')] == ["assistant"]
    assert [h["kind"] for h in search(data, "flamingo")] == ["assistant"]
    assert len([h for h in search(data, '"No such file or directory"') if h["kind"] == "output"]) == 1
    conv = conversation(data, GEMINI_IDS[LOG.name])
    assert [e["text"] for e in conv["entries"] if e["kind"] == "assistant"] == ["Tools done.",
                                                                                "Finished the flamingo."]


def test_an_opencode_call_whose_permission_was_rejected_shows_as_denied_with_its_text(tmp_path: Path) -> None:
    """opencode records a permission the user rejected as the tool part's ``error`` state: the call is shown
    with that text, an error of class ``rejected`` (the trace's), at its seq."""
    src = _opencode_tree(tmp_path / "src")
    part = src / "storage" / "part" / "msg_0a0000002001" / "prt_0a0000002008.json"
    doc = orjson.loads(part.read_bytes())
    doc["state"]["error"] = "The user rejected permission to use this specific tool call."
    part.write_bytes(orjson.dumps(doc))
    data = tmp_path / "data"
    ok("import", str(src), "--data", str(data), "-q")
    read = _calls(conversation(data, OC_MAIN))[2]
    assert read["tool"] == "read" and read["input"] == {"filePath": "/work/demo/missing.txt"}
    assert read["is_error"] and read["error_class"] == "rejected" and isinstance(read["seq"], int)
    assert read["output"] == "The user rejected permission to use this specific tool call."
    assert "rejected permission" in ok("show", OC_MAIN, "--data", str(data), "--conversation")


def test_a_gemini_call_the_user_denied_shows_with_its_text(tmp_path: Path) -> None:
    """Gemini CLI 0.61.0 records a call the user denied as ``status: "cancelled"`` with the error
    ``[Operation Cancelled] Reason: User denied execution.`` (its scheduler's words): shown as an error of
    class ``rejected``, with that text, at its seq."""
    text = LOG.read_text()
    old = ('"result":[{"functionResponse":{"id":"write_file__write_file_1796150109766_0","name":"write_file",'
           '"response":{"output":"Successfully created and wrote to new file: /work/demo/notes.txt. Here is the '
           'updated code:\\nalpha\\nbeta\\n"}}}],"status":"success"')
    assert text.count(old) == 1
    denied = "[Operation Cancelled] Reason: User denied execution."
    text = text.replace(old, '"result":[{"functionResponse":{"id":"write_file__write_file_1796150109766_0",'
                             f'"name":"write_file","response":{{"error":"{denied}"}}}}}}],"status":"cancelled"')
    lines = [line for line in text.splitlines(keepends=True) if '"functionResponse":{"id":"write_file__' not in line
             or '"type":"gemini"' in line]  # the denied call has no result message of its own
    src = tmp_path / "src"
    src.mkdir()
    (src / LOG.name).write_text("".join(lines))
    data = tmp_path / "data"
    ok("import", str(src), "--data", str(data), "-q")
    write = _calls(conversation(data, GEMINI_IDS[LOG.name]))[2]
    assert write["tool"] == "write_file" and write["input"]["file_path"] == "/work/demo/notes.txt"
    assert write["output"] == denied and write["is_error"] and write["error_class"] == "rejected"
    assert isinstance(write["seq"], int)
    assert "User denied execution." in ok("show", GEMINI_IDS[LOG.name], "--data", str(data), "--format", "markdown")


#: ``rematch report`` in a process of its own, printing how many times the opencode database was read.
_COUNTED_REPORT = """
import sys
import rematch_opencode.store as store
from rematch_trace.cli import main
reads = [0]
read_database = store.read_database
def counted(*args, **kwargs):
    reads[0] += 1
    return read_database(*args, **kwargs)
store.read_database = counted
sys.argv = ["rematch", "report", "--data", sys.argv[1], "--out", sys.argv[2]]
try:
    main()
finally:
    sys.stderr.write(f"\\nREADS={reads[0]}\\n")
"""


def test_a_report_reads_an_opencode_database_once_for_all_its_session_pages(tmp_path: Path) -> None:
    """Each session page shows its conversation, read from what the import stored of the database that holds
    every session: the report does not open the database at all (before the store, it read it once, not once
    per page: a database of 300 sessions took 175 s, then 2 s; bench); without the store, once."""
    tree = _opencode_tree(tmp_path / "tree")
    (tmp_path / "db").mkdir()
    database_from_tree(tree, tmp_path / "db" / "opencode.db").close()
    data, report = tmp_path / "data", tmp_path / "report"
    ok("import", str(tmp_path / "db"), "--data", str(data), "-q")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REMATCH_", "PYTEST_"))}
    env["REMATCH_LOAD_PLUGINS"] = "gemini_cli,opencode"
    res = subprocess.run([sys.executable, "-c", _COUNTED_REPORT, str(data), str(report)], capture_output=True,
                         text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stderr.rstrip().endswith("READS=0"), res.stderr[-500:]  # the stored conversations, no database
    main = page_text(report / "sessions" / f"{OC_MAIN}.html")
    sub = page_text(report / "sessions" / f"{OC_SUB}.html")
    assert "No rule to make target" in main and "a.txt" in main  # the subagent's output nested on the page
    assert "a.txt" in sub and "toolu_02" in sub  # and its own page names the call that started it
