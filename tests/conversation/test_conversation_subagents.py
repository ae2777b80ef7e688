"""A subagent nested under the call that started it, for the harnesses whose plugin says which call
that was (omp's ``task`` here, on the shared corpus; Codex's ``spawn_agent`` in
tests/harness/test_rig_codex_permission.py, on the rig's rollouts), through the real CLI: JSON, plain
text and Markdown, with the link back from the subagent to the call."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from test_conversation import conversation, ok

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
    page = (pages / f"{conv['key']}.html").read_text()
    assert f'<a class="sub-link" href="{sub["key"]}.html">{OMP_SUB}</a>' in page
    back_page = (pages / f"{sub['key']}.html").read_text()
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
