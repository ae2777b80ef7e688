"""The held run read back from the trace continues exactly as the held run kept in the state did.

An import's state leaves the records held back out (``state(held_out=True)``);
the continuation reads them from the trace's lines past the saved length
(``restore_held``). Whatever records came before the pause, whatever the same
import fed after it (the plugin's last records, written only as final ones:
they may add a skill to the held input) and whatever the continuation feeds,
the continued trace, its flags and its counts must be those of a continuation
from the state that kept the held records inside (what earlier versions saved).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rematch_trace.errors import RestartImport
from rematch_trace.host.vocab import (
    Abort,
    AssistantMessage,
    MarkNote,
    ModelRef,
    Neutral,
    RunEnd,
    Session,
    SkillInvoked,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from rematch_trace.store.states import state_dumps, state_loads, structure, unstructure
from rematch_trace.trace.lines import dumps_records
from rematch_trace.trace.synth import RUN_BUFFER_RECORDS, Synthesizer
from rematch_trace.trace.synth_state import SynthState

MODELS = [ModelRef("anthropic", "opus"), ModelRef("anthropic", "haiku"), None]


@st.composite
def record(draw: st.DrawFn) -> Neutral:
    """One neutral record of the kinds that open, hold, grow and end runs."""
    t = draw(st.integers(1_000, 9_000))
    kind = draw(st.sampled_from(["user", "asst", "calls", "result", "skill", "abort", "mark", "end"]))
    call = draw(st.sampled_from(["c1", "c2", "c3", "c4"]))
    if kind == "user":
        text = draw(st.sampled_from(["go on", "no, revert that", "/rematch mark scope", "fix the test", "ok"]))
        return UserMessage("", t, text)
    if kind in ("asst", "calls"):
        calls = tuple(ToolCall(c, "bash", {"cmd": c, "n": 0.1 if c == "c2" else 12345678901234567890})
                      for c in draw(st.lists(st.sampled_from(["c1", "c2", "c3", "c4"]), max_size=3, unique=True))
                      ) if kind == "calls" else ()
        return AssistantMessage("", t, draw(st.sampled_from(MODELS)), Usage(1, 2, 3, 4, 10), "stop",
                                text=draw(st.sampled_from(["", "done", "caf\u00e9 \ud800"])), tool_calls=calls)
    if kind == "result":
        error = draw(st.booleans())
        return ToolResult("", t, call, output_bytes=3, output_head="Exit code: 1" if error else "ok", is_error=error)
    if kind == "skill":
        return SkillInvoked("", t, draw(st.sampled_from(["pdf", "docx", "r\u00e9sum\u00e9"])))
    if kind == "abort":
        return Abort("", t)
    if kind == "mark":
        return MarkNote("", t, "scope", "a note")
    return RunEnd("", t, "stop")


records = st.lists(record(), max_size=30)
SESSION = Session("", 900, "s1", cwd="/w")


def _again(state: SynthState) -> SynthState:
    """The state as the ledger gives it back."""
    return structure(state_loads(state_dumps(unstructure(state))), SynthState)


def _feed(synth: Synthesizer, recs: list[Neutral]) -> list[Any]:
    out: list[Any] = []
    for r in recs:
        out += synth.feed(r)
    return out


@settings(max_examples=400, deadline=None, derandomize=True)
@given(records, records, records, st.integers(0, 2 * RUN_BUFFER_RECORDS), st.booleans())
def test_a_held_run_read_from_the_trace_continues_as_one_kept_in_the_state(
        before: list[Neutral], after_pause: list[Neutral], more: list[Neutral], long_run: int, in_place: bool) -> None:
    # A long run of results (up to twice the buffer) makes the pause fall anywhere in a run.
    run: list[Neutral] = [AssistantMessage("", 5_000, MODELS[0], None, None, tool_calls=(ToolCall("r", "bash", {}),)),
                          *[ToolResult("", 5_001, "r", output_bytes=1) for _ in range(long_run)]]
    first = Synthesizer("omp")
    _feed(first, [SESSION, *before, UserMessage("", 4_000, "start"), *run])  # (written before the pause)
    inline = _again(first.state())  # taken first: the held-out state numbers the buffer's records
    held_out = _again(first.state(held_out=True))
    # The same import goes on after the pause: its last records, then finish; all past the saved length.
    tail = dumps_records(_feed(first, after_pause) + first.finish())

    old = Synthesizer("omp", state=inline)
    new = Synthesizer("omp", state=held_out)
    kept = 0  # bytes of the tail the continuation keeps where they are
    if held_out.held:
        assert held_out.buffer == [] and len(inline.buffer) == held_out.held
        new.restore_held(tail)
        if in_place:
            kept = new.keep_held()
    else:
        assert held_out.buffer == inline.buffer
    # Written past the saved length: by the old path all of it, by the new the kept lines and what follows.
    expected = dumps_records(_feed(old, more) + old.finish())
    try:
        got = tail[:kept] + dumps_records(_feed(new, more) + new.finish())
    except RestartImport:
        # Only a held line kept in place that a new skill would change makes the file read whole.
        assert kept and any(isinstance(r, SkillInvoked) for r in more)
        return
    assert got == expected
    assert (new.flags.to_state(), new.counts, new.seq) == (old.flags.to_state(), old.counts, old.seq)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(records, records, records, st.integers(0, 2 * RUN_BUFFER_RECORDS))
def test_a_continuation_that_keeps_its_held_lines_saves_where_they_start(
        before: list[Neutral], more: list[Neutral], later: list[Neutral], long_run: int) -> None:
    # Two continuations in a row, the held lines kept in place by the first: the second reads them from
    # where the first's state says, and ends as one continuation from the first state would.
    run: list[Neutral] = [AssistantMessage("", 5_000, MODELS[0], None, None, tool_calls=(ToolCall("r", "bash", {}),)),
                          *[ToolResult("", 5_001, "r", output_bytes=1) for _ in range(long_run)]]
    first = Synthesizer("omp")
    kept_part = dumps_records(_feed(first, [SESSION, *before, UserMessage("", 4_000, "start"), *run]))
    state = _again(first.state(held_out=True))
    trace = kept_part + dumps_records(first.finish())
    reference = Synthesizer("omp", state=_again(state))  # (a synthesizer changes its state's parts in place)
    if state.held:
        reference.restore_held(trace[len(kept_part):])
    expected = kept_part + dumps_records(_feed(reference, more + later) + reference.finish())

    second = Synthesizer("omp", state=_again(state))
    size = len(kept_part)
    if state.held:
        second.restore_held(trace[len(kept_part):])
        size += second.keep_held()
    try:
        written = dumps_records(_feed(second, more))
        again = _again(second.state(held_out=True))
        trace_len = size + len(written) - second.held_kept
        trace = trace[:size] + written + dumps_records(second.finish())
        third = Synthesizer("omp", state=again)
        if again.held:
            third.restore_held(trace[trace_len:])
            trace_len += third.keep_held()
        trace = trace[:trace_len] + dumps_records(_feed(third, later) + third.finish())
    except RestartImport:
        assert any(isinstance(r, SkillInvoked) for r in more + later)
        return
    assert trace == expected


def test_a_continued_import_saves_its_held_run_out_again() -> None:
    # A continuation that leaves the run open saves the held records it read back with the new ones.
    first = Synthesizer("omp")
    _feed(first, [SESSION, UserMessage("", 1_000, "go"),
                  AssistantMessage("", 1_001, MODELS[0], None, None, tool_calls=(ToolCall("a", "bash", {}),)),
                  ToolResult("", 1_002, "a", output_bytes=1, is_error=True)])
    state = _again(first.state(held_out=True))
    tail = dumps_records(first.finish())
    assert state.held == 4 and state.flags.window == [[2, True]]  # the flags took the held result in
    second = Synthesizer("omp", state=state)
    second.restore_held(tail)
    _feed(second, [AssistantMessage("", 1_003, MODELS[0], None, None, tool_calls=(ToolCall("b", "bash", {}),)),
                   ToolResult("", 1_004, "b", output_bytes=1, is_error=True)])
    again = second.state(held_out=True)
    assert again.held == 6 and again.buffer == [] and again.flags.window == [[2, True], [4, True]]
    with pytest.raises(ValueError):
        second.state()  # read-back records cannot go back into the state


@pytest.mark.parametrize("damage", [lambda t: t[: t.index(b"\n")], lambda t: t.replace(b'{"seq":1,', b'{"seq":9,', 1),
                                    lambda t: b""])
def test_a_tail_without_the_held_records_is_refused(damage: Any) -> None:
    first = Synthesizer("omp")
    _feed(first, [SESSION, UserMessage("", 1_000, "go"), AssistantMessage("", 1_001, MODELS[0], None, None,
                                                                          tool_calls=(ToolCall("a", "bash", {}),))])
    state = _again(first.state(held_out=True))
    tail = dumps_records(first.finish())
    second = Synthesizer("omp", state=state)
    with pytest.raises(RuntimeError):
        second.finish()  # the held records are not read yet
    with pytest.raises(ValueError):
        second.restore_held(damage(tail))


def test_a_skill_the_kept_held_input_lists_already_changes_nothing() -> None:
    # The held input took a skill before the pause; the continuation names it again (a second call of it):
    # its line stays as written, in place; a skill it does not list would change the line.
    first = Synthesizer("omp")
    _feed(first, [SESSION, UserMessage("", 1_000, "go"), SkillInvoked("", 1_001, "pdf"),
                  AssistantMessage("", 1_002, MODELS[0], None, None, tool_calls=(ToolCall("a", "bash", {}),))])
    state = first.state(held_out=True)
    assert state.held_skills == ["pdf"]
    tail = dumps_records(first.finish())
    expected = Synthesizer("omp", state=_again(state))
    expected.restore_held(tail)
    again = [SkillInvoked("", 1_003, "pdf"), ToolResult("", 1_004, "a", output_bytes=1)]
    want = dumps_records(_feed(expected, again) + expected.finish())
    kept = Synthesizer("omp", state=_again(state))
    kept.restore_held(tail)
    n = kept.keep_held()
    assert n and tail[:n] + dumps_records(_feed(kept, again) + kept.finish()) == want
    other = Synthesizer("omp", state=_again(state))
    other.restore_held(tail)
    assert other.keep_held()
    with pytest.raises(RestartImport):
        other.feed(SkillInvoked("", 1_003, "docx"))
