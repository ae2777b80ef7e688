"""A subagent nested under the call that started it, for the harnesses whose plugin says which call
that was (omp's ``task`` here, on the shared corpus; Codex's ``spawn_agent`` in
tests/harness/test_rig_codex_permission.py, on the rig's rollouts), through the real CLI: JSON, plain
text and Markdown, with the link back from the subagent to the call."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from test_conversation import conversation, ok

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
from page_check import page_text

OMP_DIR = "omp/sessions/--home-dev-acme-api--"
OMP_MAIN = "0198d27b-5e03-7b8a-91c6-4fa2d83e0b57"
OMP_STEM = f"2026-08-22T11-00-00-000Z_{OMP_MAIN}"
#: The scout's own session id: the header of ``<parent's artifacts dir>/synthetic-scout.jsonl``.
OMP_SUB = "0198d27b-b9c1-7e44-8a0f-2d6c91e5f3a8"
OMP_TASK = "toolu_01Pp1Task0001"


def _omp_copy(corpus_dir: Path, into: Path) -> Path:
    """The corpus's omp parent (a ``task`` call) and the scout subagent it started, as omp lays them out."""
    src = into / "src" / "--home-dev-acme-api--"
    src.mkdir(parents=True)
    shutil.copyfile(corpus_dir / OMP_DIR / f"{OMP_STEM}.jsonl", src / f"{OMP_STEM}.jsonl")
    (src / OMP_STEM).mkdir()
    shutil.copyfile(corpus_dir / OMP_DIR / OMP_STEM / "synthetic-scout.jsonl", src / OMP_STEM / "synthetic-scout.jsonl")
    return src


def test_an_omp_task_subagent_is_nested_under_its_task_call(corpus_dir: Path, tmp_path: Path) -> None:
    _omp_copy(corpus_dir, tmp_path)
    data = tmp_path / "data"
    ok("import", str(tmp_path / "src"), "--data", str(data), "-q")
    conv = conversation(data, OMP_MAIN)
    [task] = [e for e in conv["entries"] if e.get("subagent")]
    assert (task["tool"], task["call_id"]) == ("task", OMP_TASK)
    sub = task["subagent"]
    assert sub["session_id"] == OMP_SUB and sub["key"]
    nested = sub["conversation"]
    assert [e["tool"] for e in nested["entries"] if e["kind"] == "call"] == ["grep", "read"]
    assert nested["parent"] == {"session_id": OMP_MAIN, "key": conv["key"], "call_id": OMP_TASK}
    # The subagent's own view links back to the call.
    back = conversation(data, OMP_SUB)
    assert back["parent"] == {"session_id": OMP_MAIN, "key": conv["key"], "call_id": OMP_TASK}
    text = ok("show", OMP_MAIN, "--data", str(data), "--conversation")
    assert f"subagent {OMP_SUB}: rematch show {OMP_SUB} --conversation" in text
    assert "  | " in text and "tool grep" in text
    assert f"subagent of {OMP_MAIN}, call {OMP_TASK}" in ok("show", OMP_SUB, "--data", str(data), "--conversation")
    md = ok("show", OMP_MAIN, "--data", str(data), "--conversation", "--format", "markdown")
    assert f"Subagent `{OMP_SUB}`:" in md and "> ### Tool `grep`" in md
    md = ok("show", OMP_SUB, "--data", str(data), "--conversation", "--format", "markdown")
    assert f"Subagent of {OMP_MAIN}, started by call `{OMP_TASK}`" in md
    # The report's pages: the subagent under the call, linking to its page; its page back to that call.
    ok("report", "--data", str(data))
    pages = data / "report" / "sessions"
    page = page_text(pages / f"{conv['key']}.html")
    assert f'<a class="sub-link" href="{sub["key"]}.html">{OMP_SUB}</a>' in page
    back_page = page_text(pages / f"{sub['key']}.html")
    assert f'class="parent-link" href="{conv["key"]}.html#call-{OMP_TASK}"' in back_page
    assert f'class="family-parent" href="{conv["key"]}.html#call-{OMP_TASK}"' in back_page


def test_an_omp_task_result_naming_no_session_file_starts_no_subagent(corpus_dir: Path, tmp_path: Path) -> None:
    """The task result names the subagent by its id; with no ``<artifacts dir>/<id>.jsonl`` beside the parent
    (deleted, or never written) nothing is guessed: the call stands alone."""
    src = _omp_copy(corpus_dir, tmp_path)
    shutil.rmtree(src / OMP_STEM)
    data = tmp_path / "data"
    ok("import", str(tmp_path / "src"), "--data", str(data), "-q")
    conv = conversation(data, OMP_MAIN)
    [task] = [e for e in conv["entries"] if e["kind"] == "call" and e["tool"] == "task"]
    assert task["subagent"] is None and task["output"]


def test_an_omp_task_running_two_subagents_nests_both(corpus_dir: Path, tmp_path: Path) -> None:
    """omp's ``task`` runs several subagents in one call (its ``tasks``): each result's id names one
    session file; both nest under the one call. The corpus's parent, its result given a second scout."""
    src = _omp_copy(corpus_dir, tmp_path)
    parent = src / f"{OMP_STEM}.jsonl"
    lines = parent.read_text().splitlines()
    for i, line in enumerate(lines):
        rec = json.loads(line)
        details = rec.get("message", {}).get("details") if rec.get("type") == "message" else None
        if isinstance(details, dict) and details.get("results"):
            details["results"].append({**details["results"][0], "index": 1, "id": "second-scout"})
            lines[i] = json.dumps(rec)
    parent.write_text("\n".join(lines) + "\n")
    second = (src / OMP_STEM / "synthetic-scout.jsonl").read_text().replace(OMP_SUB, "0198d27b-b9c1-7e44-8a0f-00000000beef")
    (src / OMP_STEM / "second-scout.jsonl").write_text(second)
    data = tmp_path / "data"
    ok("import", str(tmp_path / "src"), "--data", str(data), "-q")
    conv = conversation(data, OMP_MAIN)
    [task] = [e for e in conv["entries"] if e.get("subagent")]
    subs = [task["subagent"], *task["other_subagents"]]
    assert [s["session_id"] for s in subs] == [OMP_SUB, "0198d27b-b9c1-7e44-8a0f-00000000beef"]
    assert all(s["key"] and s["conversation"]["entries"] for s in subs)
    text = ok("show", OMP_MAIN, "--data", str(data), "--conversation")
    assert all(f"subagent {s['session_id']}:" in text for s in subs)
    back = conversation(data, "0198d27b-b9c1-7e44-8a0f-00000000beef")
    assert back["parent"]["call_id"] == OMP_TASK


CC_DEMO = "claude_code/projects/-path-to-Demo/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
CC_MAIN = "fe5e1c67-53e7-4862-81ae-d0e013e3270b"


def test_a_claude_code_1_0_sidechain_is_nested_under_the_task_call_whose_prompt_opens_it(
        corpus_dir: Path, tmp_path: Path) -> None:
    """A 1.0 file keeps each agent inline as a sidechain that names no call; its first line is the
    Task call's prompt word for word. The corpus's Demo session: five Task calls, five sidechains,
    written in another order than the calls were made."""
    from test_conversation import copy_corpus

    src = tmp_path / "src"
    path = copy_corpus(corpus_dir, CC_DEMO, src)
    prompts: dict[str, str] = {}  # the Task calls' prompts, from the file
    opening: dict[int, str] = {}  # sidechain number -> the text that opens it
    for line in path.read_bytes().splitlines():
        v = json.loads(line)
        content = (v.get("message") or {}).get("content")
        if v.get("isSidechain") is False and isinstance(content, list):
            prompts.update({b["id"]: b["input"]["prompt"] for b in content
                            if b.get("type") == "tool_use" and b.get("name") == "Task"})
        if v.get("isSidechain") is True and v.get("parentUuid") is None:
            opening[len(opening) + 1] = content
    assert len(prompts) == len(opening) == 5
    data = tmp_path / "data"
    ok("import", str(src), "--data", str(data), "-q")
    conv = conversation(data, CC_MAIN)
    tasks = [e for e in conv["entries"] if e["kind"] == "call" and e["tool"] == "Task"]
    assert [e["call_id"] for e in tasks] == list(prompts)
    for task in tasks:
        sub = task["subagent"]
        n = int(sub["session_id"].rsplit("-", 1)[1])
        assert sub["session_id"] == f"{CC_MAIN}.sidechain-{n}" and sub["key"]
        assert opening[n] == prompts[task["call_id"]]  # the link is the prompt, and nothing else
        assert sub["conversation"]["parent"]["call_id"] == task["call_id"]
        back = conversation(data, sub["session_id"])
        assert back["parent"] == {"session_id": CC_MAIN, "key": conv["key"], "call_id": task["call_id"]}
    # The calls were made in another order than their sidechains were written.
    assert [int(t["subagent"]["session_id"].rsplit("-", 1)[1]) for t in tasks] != sorted(range(1, 6))
    # The report's pages: each sidechain under its call, and its page back to that call.
    ok("report", "--data", str(data))
    pages = data / "report" / "sessions"
    page = page_text(pages / f"{conv['key']}.html")
    for task in tasks:
        sub = task["subagent"]
        assert f'<a class="sub-link" href="{sub["key"]}.html">{sub["session_id"]}</a>' in page
        back_page = page_text(pages / f"{sub['key']}.html")
        assert f'class="family-parent" href="{conv["key"]}.html#call-{task["call_id"]}"' in back_page


def test_two_task_calls_with_one_prompt_link_in_order_and_an_unmatched_sidechain_stands_alone(
        tmp_path: Path) -> None:
    """Two calls with the same prompt: the earlier call gets the earlier sidechain. A sidechain whose
    opening text is no call's prompt is linked to its session only (no call guessed)."""
    sid = "0c0c0c0c-1111-4222-8333-444444444444"

    def line(uuid: str, parent: str | None, typ: str, content: object, side: bool, ts: str) -> str:
        return json.dumps({"type": typ, "uuid": uuid, "parentUuid": parent, "isSidechain": side,
                           "sessionId": sid, "cwd": "/w", "version": "1.0.98", "timestamp": ts,
                           "message": {"role": typ, "content": content}})

    def task(call: str) -> list[dict[str, object]]:
        return [{"type": "tool_use", "id": call, "name": "Task", "input": {"prompt": "Count the files.",
                                                                          "description": "count"}}]

    rows = [
        line("u1", None, "user", "Go.", False, "2025-09-03T00:00:01.000Z"),
        line("a1", "u1", "assistant", task("toolu_first"), False, "2025-09-03T00:00:02.000Z"),
        line("a2", "a1", "assistant", task("toolu_second"), False, "2025-09-03T00:00:03.000Z"),
        line("s1", None, "user", "Count the files.", True, "2025-09-03T00:00:04.000Z"),
        line("s2", "s1", "assistant", [{"type": "text", "text": "One."}], True, "2025-09-03T00:00:05.000Z"),
        line("t1", None, "user", "Count the files.", True, "2025-09-03T00:00:06.000Z"),
        line("t2", "t1", "assistant", [{"type": "text", "text": "Two."}], True, "2025-09-03T00:00:07.000Z"),
        line("w1", None, "user", "Something no call asked.", True, "2025-09-03T00:00:08.000Z"),
        line("w2", "w1", "assistant", [{"type": "text", "text": "Three."}], True, "2025-09-03T00:00:09.000Z"),
    ]
    src = tmp_path / "src" / "-w"
    src.mkdir(parents=True)
    (src / f"{sid}.jsonl").write_text("\n".join(rows) + "\n")
    data = tmp_path / "data"
    ok("import", str(tmp_path / "src"), "--data", str(data), "-q")
    conv = conversation(data, sid)
    linked = {e["call_id"]: e["subagent"]["session_id"] for e in conv["entries"] if e.get("subagent")}
    assert linked == {"toolu_first": f"{sid}.sidechain-1", "toolu_second": f"{sid}.sidechain-2"}
    alone = conversation(data, f"{sid}.sidechain-3")
    assert alone["parent"]["session_id"] == sid and alone["parent"]["call_id"] is None
