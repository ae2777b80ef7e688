"""The conversation view (``rematch show SESSION --conversation``, the report's session page) through the real
CLI: each harness's corpus sessions, a source that is gone, subagents linked both ways, a denied call, and
planted secrets in tool outputs that no view ever shows."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "security"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hostile"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "capture"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
from hostile_gen import cli_env
from page_check import page_text
from test_security_planted import PLANTED, claude_code_file, codex_file, omp_file

#: One corpus file per harness, and a phrase of a tool output in it (not in the trace, which keeps sizes only).
CORPUS = {
    "claude_code": ("claude_code/projects/-Users-USER-spotter/55604662-cf2a-4331-851a-ec234028f8ca.jsonl",
                    "55604662-cf2a-4331-851a-ec234028f8ca"),
    "codex": ("codex/sessions/2025/12/09/rollout-2025-12-09T19-55-16-019b04ae-b1c6-7c72-a134-a4c2de66058c.jsonl",
              "019b04ae-b1c6-7c72-a134-a4c2de66058c"),
    "omp": ("omp/sessions/--home-dev-acme-api--/2026-08-21T14-02-10-500Z_0198cc2a-13f0-7a6b-9c44-e07d5b31a9f2.jsonl",
            "0198cc2a-13f0-7a6b-9c44-e07d5b31a9f2"),
}


def rematch(*args: str) -> subprocess.CompletedProcess[str]:
    """``rematch`` as a user runs it, with the three plugins."""
    return subprocess.run([sys.executable, "-m", "rematch_trace.cli", *args], capture_output=True, text=True,
                          env=cli_env(), timeout=120, errors="replace")


def ok(*args: str) -> str:
    res = rematch(*args)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def conversation(data: Path, sid: str) -> dict[str, Any]:
    """``rematch show SID --conversation --format json``."""
    got = orjson.loads(ok("show", sid, "--data", str(data), "--conversation", "--format", "json"))
    assert isinstance(got, dict)
    return got


def copy_corpus(corpus_dir: Path, rel: str, into: Path) -> Path:
    target = into / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(corpus_dir / rel, target)
    return target


@pytest.mark.parametrize("harness", sorted(CORPUS))
def test_each_harness_corpus_session_shows_its_conversation(harness: str, corpus_dir: Path, tmp_path: Path) -> None:
    rel, sid = CORPUS[harness]
    copy_corpus(corpus_dir, rel, tmp_path / "src")
    data = tmp_path / "data"
    ok("import", str(tmp_path / "src"), "--data", str(data), "-q")
    conv = conversation(data, sid)
    assert conv["status"] == "ok" and conv["note"] == "" and conv["harness"] == harness
    kinds = [e["kind"] for e in conv["entries"]]
    assert "prompt" in kinds and "assistant" in kinds and "call" in kinds
    calls = [e for e in conv["entries"] if e["kind"] == "call"]
    # Every call has its output text from the source (the trace keeps only its size), and its trace seq.
    assert all(c["output"] is not None for c in calls), [c["tool"] for c in calls if c["output"] is None]
    assert any(c["output"].strip() for c in calls)
    assert all(isinstance(c["seq"], int) for c in calls)
    # The prompts carry the seqs of the trace's inputs (a "!" shell line or a slash command has no input record).
    prompts = [e for e in conv["entries"] if e["kind"] == "prompt" and not e["text"].startswith(("!", "/"))]
    assert prompts and all(isinstance(e["seq"], int) for e in prompts), prompts
    # Text and Markdown say the same things.
    text = ok("show", sid[:12], "--data", str(data), "--conversation")
    assert calls[0]["tool"] in text and ("output:" in text or "error:" in text)
    md = ok("show", sid, "--data", str(data), "--format", "markdown")
    assert md.startswith(f"# {harness} session {sid}") and "## User" in md and "## Tool `" in md


def test_the_assistant_text_stays_between_the_calls_it_was_written_between(corpus_dir: Path, tmp_path: Path) -> None:
    """Claude Code writes a message's blocks on separate lines: text, call, text, call keep their order."""
    rel = "claude_code/projects/-Users-USER-handgemacht/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"
    src = tmp_path / "src"
    copy_corpus(corpus_dir, rel, src)
    for sub in ("agent-a7be2f0.jsonl",):
        copy_corpus(corpus_dir, rel.replace(".jsonl", f"/subagents/{sub}"), src)
    data = tmp_path / "data"
    ok("import", str(src), "--data", str(data), "-q")
    conv = conversation(data, "8463c716-a2ea-4c14-9efa-87158ebd9f20")
    entries = conv["entries"]
    said = [i for i, e in enumerate(entries) if e["kind"] == "assistant"]
    called = [i for i, e in enumerate(entries) if e["kind"] == "call"]
    # Assistant text both before and after calls (not all gathered after them).
    assert any(called[0] < i < called[-1] for i in said)
    claim = next(i for i, e in enumerate(entries) if e["kind"] == "assistant" and "claim this task" in e["text"])
    assert entries[claim + 1]["kind"] == "call" and "in_progress" in str(entries[claim + 1]["input"])
    # The compaction is readable: its trigger and the summary the session went on with.
    [compaction] = [e for e in entries if e["kind"] == "compaction"]
    assert compaction["trigger"] == "auto" and "continued from a previous conversation" in compaction["text"]
    # The error cluster's seqs are on the failed calls that make it.
    flagged = [e for e in entries if "error_cluster" in e["reasons"]]
    assert flagged and {e["seq"] for e in flagged} == set(conv["flag_seqs"]["error_cluster"])
    assert all(e["is_error"] for e in flagged)
    # The Task call that started the subagent: its conversation nested, and the subagent links back.
    [task] = [e for e in entries if e.get("subagent")]
    sub = task["subagent"]
    assert sub["session_id"] == "8463c716-a2ea-4c14-9efa-87158ebd9f20.agent-a7be2f0" and sub["key"]
    assert sub["conversation"]["entries"] and sub["conversation"]["parent"]["call_id"] == task["call_id"]
    back = conversation(data, sub["session_id"])
    assert back["parent"] == {"session_id": "8463c716-a2ea-4c14-9efa-87158ebd9f20",
                              "key": "8463c716-a2ea-4c14-9efa-87158ebd9f20", "call_id": task["call_id"]}


def test_a_source_that_is_gone_is_said_plainly(corpus_dir: Path, tmp_path: Path) -> None:
    rel, sid = CORPUS["codex"]
    copy = copy_corpus(corpus_dir, rel, tmp_path / "src")
    data = tmp_path / "data"
    ok("import", str(tmp_path / "src"), "--data", str(data), "-q")
    copy.unlink()
    # The import stored the conversation: it is all there without the transcript (outputs too).
    conv = conversation(data, sid)
    assert conv["status"] == "ok" and conv["read_from"] == "store"
    assert any(e["kind"] == "call" and e["output"] for e in conv["entries"])
    # Without what the import stored (a data folder from before), the trace is all there is, said so.
    for rows in (data / "conversations").glob("*.rows"):
        rows.unlink()
    conv = conversation(data, sid)
    assert conv["status"] == "gone" and "is gone" in conv["note"]
    # What the trace keeps is still shown: the prompts and the calls (without their output).
    assert any(e["kind"] == "prompt" for e in conv["entries"])
    assert all(e["output"] is None for e in conv["entries"] if e["kind"] == "call")
    text = ok("show", sid, "--data", str(data), "--conversation")
    assert "NOTE: the source transcript" in text and "is gone" in text
    report = tmp_path / "report"
    ok("report", "--data", str(data), "--out", str(report))
    page = page_text(report / "sessions" / f"{sid}.html")
    assert "is gone: only the trace" in page


@pytest.mark.parametrize("redact", [True, False], ids=["redacted-import", "no-redact-import"])
def test_a_planted_secret_in_a_tool_output_appears_in_no_view(redact: bool, tmp_path: Path) -> None:
    sids = {}
    for make in (claude_code_file, codex_file, omp_file):
        sub = tmp_path / make.__name__
        sub.mkdir()
        sids[make.__name__] = make(sub)
    data = tmp_path / "data"
    ok("import", str(tmp_path), "--data", str(data), "-q", *(() if redact else ("--no-redact",)))
    report = tmp_path / "report"
    ok("report", "--data", str(data), "--out", str(report))
    sessions = orjson.loads(ok("sessions", "--data", str(data), "--json"))
    assert len(sessions) == 3
    for s in sessions:
        sid = s["session_id"]
        views = [ok("show", sid, "--data", str(data), "--conversation"),
                 ok("show", sid, "--data", str(data), "--conversation", "--full"),
                 ok("show", sid, "--data", str(data), "--format", "markdown"),
                 ok("show", sid, "--data", str(data), "--format", "json")]
        for page in (report / "sessions").glob("*.html"):
            html = page_text(page)
            if not redact:
                # The timeline shows the trace as the import kept it (--no-redact: as the user chose);
                # the conversation is redacted whatever the import's settings.
                html = html[html.index('<section class="conversation"'):html.index('<section class="timeline"')]
            views.append(html)
        # The outputs are shown (their text around the secrets), the secrets never.
        assert "result:" in views[1], sid
        for view in views:
            for secret in PLANTED:
                assert secret not in view, (sid, secret)


def test_a_denied_call_and_a_mark_are_shown_in_place(tmp_path: Path) -> None:
    """A live Claude Code session whose call rematch denied, then marked: the call with its denial and the
    harness's error text, and the trace's mark after it, flagged."""
    from capture_helpers import HOOK_ARGV, hook_env, make_repo

    sid = "9d2c4e6f-8a0b-4c1d-9e2f-3a4b5c6d7e8f"
    data = tmp_path / "data"
    env = hook_env(tmp_path, data, sid)
    repo = make_repo(tmp_path / "repo")
    transcript = tmp_path / "t.jsonl"
    error = "PreToolUse:Bash hook error: rematch: The call deletes the home folder. (policy:delete-home)"
    base = {"sessionId": sid, "cwd": str(repo), "version": "2.1.39", "isSidechain": False, "userType": "external"}
    lines = [
        {**base, "type": "user", "uuid": "u1", "timestamp": "2026-02-10T21:00:01.000Z",
         "message": {"role": "user", "content": "clean up"}},
        {**base, "type": "assistant", "uuid": "u2", "timestamp": "2026-02-10T21:00:02.000Z",
         "message": {"id": "m1", "role": "assistant", "model": "claude-sonnet-4-5", "content": [
             {"type": "text", "text": "I will wipe the home folder."},
             {"type": "tool_use", "id": "toolu_wipe", "name": "Bash", "input": {"command": "rm -rf ~"}}]}},
        {**base, "type": "user", "uuid": "u3", "timestamp": "2026-02-10T21:00:03.000Z", "message": {
            "role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_wipe", "is_error": True,
                                         "content": error}]}},
        {**base, "type": "user", "uuid": "u4", "timestamp": "2026-02-10T21:00:04.000Z",
         "message": {"role": "user", "content": "/rematch mark correction never wipe home"}},
    ]
    transcript.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    hook = {"session_id": sid, "transcript_path": str(transcript), "cwd": str(repo), "permission_mode": "default"}
    wipe = {"tool_name": "Bash", "tool_use_id": "toolu_wipe", "tool_input": {"command": "rm -rf ~"}}
    for fields in ({"hook_event_name": "UserPromptSubmit", "prompt": "clean up"},
                   {"hook_event_name": "PreToolUse", **wipe},
                   {"hook_event_name": "PostToolUseFailure", **wipe, "error": error},
                   {"hook_event_name": "UserPromptSubmit", "prompt": "/rematch mark correction never wipe home"},
                   {"hook_event_name": "Stop", "last_assistant_message": "I was stopped."},
                   {"hook_event_name": "SessionEnd", "reason": "other"}):
        res = subprocess.run(HOOK_ARGV, input=orjson.dumps({**hook, **fields}), env=env, capture_output=True,
                             timeout=60)
        assert res.returncode == 0, res.stderr
    conv = conversation(data, sid)
    assert conv["status"] == "ok", conv["note"]
    [call] = [e for e in conv["entries"] if e["kind"] == "call"]
    assert call["tool"] == "Bash" and call["input"] == {"command": "rm -rf ~"}
    assert [b["state"] for b in call["blocked"]] == ["denied"] and "delete" in call["blocked"][0]["reason"]
    assert call["is_error"] and "policy:delete-home" in call["output"]
    said = [e["text"] for e in conv["entries"] if e["kind"] == "assistant"]
    assert said == ["I will wipe the home folder."]
    kinds = [e["kind"] for e in conv["entries"]]
    assert kinds.index("mark") > kinds.index("call")
    [mark] = [e for e in conv["entries"] if e["kind"] == "mark"]
    assert mark["trigger"] == "correction" and "mark" in mark["reasons"] and mark["seq"] in conv["flag_seqs"]["mark"]
    text = ok("show", sid, "--data", str(data), "--conversation")
    assert "DENIED by rematch" in text and "mark correction   <- mark" in text
