"""The synthesis rules, fed neutral records directly."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rematch_trace import args_hash
from rematch_trace.host.vocab import (
    Abort,
    AssistantMessage,
    EntryLoaded,
    Instructions,
    MarkNote,
    ModelRef,
    Neutral,
    Session,
    SkillInvoked,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from rematch_trace.place.identity import Place
from rematch_trace.store.states import structure, unstructure
from rematch_trace.testing import validate_trace
from rematch_trace.trace import synth as synth_mod
from rematch_trace.trace.fold import fold_trace
from rematch_trace.trace.records import LoadedEntry, from_dict
from rematch_trace.trace.synth import RUN_BUFFER_RECORDS, Synthesizer
from rematch_trace.trace.synth_state import SynthState

OPUS = ModelRef("anthropic", "opus")
HAIKU = ModelRef("anthropic", "haiku")


def run(records: list[Neutral], **kw: Any) -> list[dict[str, Any]]:
    s = Synthesizer("omp", **kw)
    out: list[dict[str, Any]] = []
    for r in records:
        out += s.feed(r)
    out += s.finish()
    assert validate_trace(out) == []
    return out


def evs(trace: list[dict[str, Any]]) -> list[str]:
    return [r["ev"] for r in trace]


def sess(**kw: Any) -> Session:
    return Session("", 1000, "s1", cwd="/w", **kw)


def user(text: str, t: int = 2000, **kw: Any) -> UserMessage:
    return UserMessage("", t, text, **kw)


def asst(text: str = "", calls: tuple[ToolCall, ...] = (), model: ModelRef | None = OPUS, t: int = 3000,
         **kw: Any) -> AssistantMessage:
    return AssistantMessage("", t, model, Usage(1, 2, 3, 4, 10), "stop", text=text, tool_calls=calls, **kw)


def result(call_id: str, error: bool = False, head: str = "", t: int = 4000, **kw: Any) -> ToolResult:
    return ToolResult("", t, call_id, output_bytes=len(head), output_head=head, is_error=error, **kw)


def test_session_start_assembly() -> None:
    place = Place(repo="/w", repo_remote="git@h:o/r.git", subpath="", head_sha="abc")
    trace = run([sess(harness_version="18.2.0"), user("hi"), asst("hello")], place_of=lambda cwd: place)
    start = trace[0]
    assert start["ev"] == "session_start" and start["seq"] == 0 and start["t"] == 1000
    assert start["model"] == {"provider": "anthropic", "id": "opus"}
    assert start["mode"] == "import" and start["agent"] == {"kind": "main", "name": "omp"}
    assert start["omp_version"] == "18.2.0"
    assert start["repo"] == "/w" and start["branch_hint"] == "w" and start["repo_remote"] == "git@h:o/r.git"
    assert start["head_sha"] is None  # imports never record it
    assert [r["seq"] for r in trace] == list(range(len(trace)))


def test_subagent_and_no_assistant() -> None:
    trace = run([Session("", 5, "sub1", agent_kind="sub"), user("task")])
    assert trace[0]["agent"]["kind"] == "sub" and trace[0]["model"] is None
    assert evs(trace) == ["session_start", "input", "agent_end", "session_shutdown"]


def test_order_of_a_run() -> None:
    c1, c2 = ToolCall("c1", "bash", {"cmd": "ls"}), ToolCall("c2", "read", {"path": "a"})
    trace = run([sess(), user("go"), asst("a", (c1, c2)), result("c2"), result("c1"), asst("done"),
                 user("thanks"), asst("bye")])
    assert evs(trace) == ["session_start", "input", "tool_result", "tool_result", "turn_end", "turn_end",
                          "agent_end", "input", "turn_end", "agent_end", "session_shutdown"]
    assert [r["call_id"] for r in trace if r["ev"] == "tool_result"] == ["c2", "c1"]
    ends = [r for r in trace if r["ev"] == "agent_end"]
    assert [e["turns"] for e in ends] == [2, 1] and all(e["is_terminal"] for e in ends)


def test_pairing_and_unpaired() -> None:
    c1 = ToolCall("c1", "bash", {"cmd": "x" * 20000})
    trace = run([sess(), user("go"), asst("", (c1, ToolCall("c9", "bash", {}))), result("c1"),
                 result("zz", tool="edit"), user("next")])
    tr = [r for r in trace if r["ev"] == "tool_result"]
    assert tr[0]["tool"] == "bash" and tr[0]["args_hash"] == args_hash({"cmd": "x" * 20000})
    assert tr[0]["input"]["cmd"].endswith("…[+" + str(20000 - len(tr[0]["input"]["cmd"].split("…")[0])) + "]")
    assert tr[1]["tool"] == "edit" and tr[1]["input"] is None and tr[1]["args_hash"] is None
    # the call without a result closes at the next input: turn_end before agent_end
    assert evs(trace)[-7:] == ["tool_result", "tool_result", "turn_end", "agent_end", "input", "agent_end",
                               "session_shutdown"]


def test_interrupt_after_abort_and_aborted_stop() -> None:
    trace = run([sess(), user("a"), asst("x"), Abort("", 3500), user("b"), asst("y", aborted=True), user("c"),
                 asst("z"), user("d")])
    inputs = [r for r in trace if r["ev"] == "input"]
    assert [(i["idle"], i["prelabel"]) for i in inputs] == [
        (True, "none"), (False, "interrupt"), (False, "interrupt"), (True, "none")]
    assert inputs[1]["after_deliverable"] == "x"


def test_dropped_lines_marks_and_skills() -> None:
    trace = run([sess(), user("/model opus"), user("!ls"), user("%pwd"), user("/rematch-mark scope too wide"),
                 user("/skill:deploy now"), asst("ok"), SkillInvoked("", 1, "review"), user("x", skills=("docs",))])
    inputs = [r for r in trace if r["ev"] == "input"]
    assert [i["text"] for i in inputs] == ["/rematch mark scope too wide", "/skill:deploy now", "x"]
    assert inputs[0]["prelabel"] == "mark:scope"
    assert inputs[1]["skills_invoked"] == ["deploy", "review"]
    assert inputs[2]["skills_invoked"] == ["docs"]
    assert trace[-1]["reasons"] == ["mark"]


def test_model_change_precedes_turn_end() -> None:
    trace = run([sess(), user("a"), asst("1"), asst("2", model=HAIKU), asst("3", model=HAIKU), asst("4", model=None)])
    assert evs(trace)[2:6] == ["turn_end", "model_change", "turn_end", "turn_end"]
    mc = trace[3]
    assert mc["from"]["id"] == "opus" and mc["to"]["id"] == "haiku" and mc["reason"] == "turn"


def test_text_limits() -> None:
    big = "é" * 20000
    trace = run([sess(), user(big), asst(big), user("b")])
    inputs = [r for r in trace if r["ev"] == "input"]
    assert len(inputs[0]["text"].encode()) <= 16384 and len(inputs[0]["text"].encode()) > 16380
    assert len(inputs[1]["after_deliverable"].encode()) <= 2048
    turn = next(r for r in trace if r["ev"] == "turn_end")
    assert len(turn["text_head"].encode()) <= 2048


def test_flags_in_shutdown() -> None:
    calls = tuple(ToolCall(f"c{i}", "bash", {}) for i in range(3))
    trace = run([sess(), user("a"), asst("", calls), *[result(c.id, error=True, head="Exit code: 2") for c in calls]])
    assert trace[-1] == {**trace[-1], "ev": "session_shutdown", "reasons": ["error_cluster"], "flagged": True}
    assert {r["error_class"] for r in trace if r["ev"] == "tool_result"} == {"exit_nonzero"}


def test_structured_error_class_wins() -> None:
    trace = run([sess(), user("a"), asst("", (ToolCall("c", "bash", {}),)),
                 result("c", error=True, head="anything", error_class="rejected")])
    assert next(r for r in trace if r["ev"] == "tool_result")["error_class"] == "rejected"


def test_marks_entries_visible() -> None:
    trace = run([sess(), Instructions("", 1, "offers"), EntryLoaded("", 1, "deploy", "1.0", "ab"), user("a"), asst("b"),
                 MarkNote("", 5, "correction", "note"), EntryLoaded("", 6, "late"), EntryLoaded("", 7, "later", "2.0", "cd")],
                visible_of=lambda text: ["deploy", "review"])
    assert trace[0]["visible_entries"] == ["deploy", "review"]
    assert trace[0]["loaded_entries"] == [{"id": "deploy", "version": "1.0", "sha": "ab"}]
    assert any(r["ev"] == "mark" and r["class"] == "correction" for r in trace)
    retrievals = [r for r in trace if r["ev"] == "retrieval"]
    # A late load keeps its version and sha (the live form, without them, stays as it was).
    assert retrievals[0] == {**retrievals[0], "entry_ids": ["late"]} and "loaded_entries" not in retrievals[0]
    assert retrievals[1]["loaded_entries"] == [{"id": "later", "version": "2.0", "sha": "cd"}]


def test_late_loads_fold_with_version_and_plain_entries_are_read(tmp_path: Path) -> None:
    trace = run([sess(), EntryLoaded("", 1, "deploy", "1.0", "ab"), user("a"), asst("b"),
                 EntryLoaded("", 7, "later", "2.0", "cd")])
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in trace))
    assert fold_trace(path).loaded_entries == [LoadedEntry("deploy", "1.0", "ab"), LoadedEntry("later", "2.0", "cd")]
    # Older traces list loaded entries as plain ids: still read by every reader.
    trace[0]["loaded_entries"] = ["deploy", "review"]
    assert validate_trace(trace) == []
    assert from_dict(trace[0]).loaded_entries == [LoadedEntry("deploy"), LoadedEntry("review")]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in trace))
    assert [e.id for e in fold_trace(path).loaded_entries] == ["deploy", "review", "later"]


def test_redaction_hooks_apply_but_hash_uses_original() -> None:
    call = ToolCall("c", "bash", {"cmd": "echo SECRET"})
    trace = run([sess(), user("my SECRET"), asst("SECRET", (call,)), result("c")],
                redact=lambda s: s.replace("SECRET", "[R]"),
                redact_input=lambda v: orjson.loads(orjson.dumps(v).replace(b"SECRET", b"[R]")))
    blob = orjson.dumps(trace)
    assert b"SECRET" not in blob
    assert next(r for r in trace if r["ev"] == "tool_result")["args_hash"] == args_hash({"cmd": "echo SECRET"})


def test_run_buffer_is_bounded() -> None:
    s = Synthesizer("omp")
    s.feed(sess())
    s.feed(user("a"))
    written = 0
    for i in range(RUN_BUFFER_RECORDS * 3):
        written += len(s.feed(asst(str(i))))
    assert written > 0 and len(s.buffer) <= RUN_BUFFER_RECORDS


SCRIPT: list[Neutral] = [
    sess(), Instructions("", 1, "x"), user("fix it"), asst("a", (ToolCall("c1", "bash", {"n": 1}),)),
    result("c1", error=True, head="Exit code: 1"), SkillInvoked("", 1, "s"), asst("b", model=HAIKU), Abort("", 5),
    user("no, revert"), asst("c", (ToolCall("c2", "bash", {}), ToolCall("c3", "bash", {}))), result("c2"),
    user("/rematch mark scope"), asst("d"), result("c3", error=True), user("fix it again please now ok"),
]


@pytest.mark.parametrize("cut", range(len(SCRIPT) + 1))
def test_pause_anywhere_equals_one_pass(cut: int) -> None:
    whole = run(SCRIPT)
    first = Synthesizer("omp")
    out: list[dict[str, Any]] = []
    for r in SCRIPT[:cut]:
        out += first.feed(r)
    saved = structure(orjson.loads(orjson.dumps(unstructure(first.state()))), SynthState)
    second = Synthesizer("omp", state=saved)
    for r in SCRIPT[cut:]:
        out += second.feed(r)
    out += second.finish()
    assert out == whole


def test_held_records_are_saved_as_fields_and_time() -> None:
    # In memory a held record is kept as it will be written; the saved state keeps the form
    # earlier versions saved, [fields without seq and t, t], so their states still continue.
    s = Synthesizer("omp")
    for r in SCRIPT[:4]:
        s.feed(r)
    held = s.state().buffer
    assert held and all(type(t) is int and "seq" not in d and "t" not in d for d, t in held)
    assert [d["ev"] for d, _ in held] == ["session_start", "input"]
    again = Synthesizer("omp", state=s.state()).state()
    assert again.buffer == held


@pytest.mark.parametrize(
    "text,cls",
    [
        ("Exit code: 2\nboom", "exit_nonzero"),
        ("Process exited with code 1", "exit_nonzero"),
        ('{"output":"x","metadata":{"exit_code": 3}}', "exit_nonzero"),
        ("command timed out after 10000 milliseconds", "timeout"),
        ("Exit code: 124", "timeout"),
        ("The user doesn't want to proceed with this tool use.", "rejected"),
        ("exec command rejected by user", "rejected"),
        ("Wall time: 1.0 seconds\naborted by user", "interrupted"),
        ("failed in sandbox Seatbelt with execution error", "sandbox"),
        ("bash: /etc/shadow: Permission denied", "permission"),
        ("cat: x.py: No such file or directory", "not_found"),
        ("<tool_use_error>File has not been read yet.</tool_use_error>", "invalid_input"),
        ("something odd happened", "tool_error"),
        ("Exit code: 0", "tool_error"),
    ],
)
def test_fallback_error_classifier(text: str, cls: str) -> None:
    from rematch_trace.errors import classify_error

    assert classify_error(text) == cls


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sets(st.text(alphabet="abcdexyz0189", max_size=80), max_size=12), max_size=6))
def test_remembered_token_digests_are_the_digests(inputs: list[set[str]]) -> None:
    # The saved state's token digests are those of the general formula, whether a word was seen before or not
    # (short and long words, with the memo full and cleared on the way).
    synth_mod._WORD_DIGESTS_MAX = 7
    try:
        for words in inputs * 2:
            assert synth_mod._token_digest(words) == sorted(hashlib.sha256(w.encode()).hexdigest()[:16] for w in words)
    finally:
        synth_mod._WORD_DIGESTS_MAX = 1 << 14
