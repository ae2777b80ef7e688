"""The omp plugin's live translation of rematch's pi/omp extension payloads, one rule per test."""

from __future__ import annotations

from typing import Any

import orjson

import rematch_omp
from rematch_omp import live
from rematch_omp.translate import _assistant, _tool_result, _user
from rematch_trace.host import vocab

SID = "01a2325f-2992-7301-9818-ea5049f42eb3"
T = 1_796_141_427_875
ASSISTANT = {"role": "assistant", "content": [{"type": "text", "text": "Let me look."},
                                              {"type": "toolCall", "id": "toolu_1", "name": "bash",
                                               "arguments": {"command": "ls"}}],
             "provider": "rig", "model": "claude-rig-1", "stopReason": "toolUse",
             "usage": {"input": 10, "output": 2, "cacheRead": 3, "cacheWrite": 1, "totalTokens": 16,
                       "cost": {"total": 0.5}}}
RESULT = {"role": "toolResult", "toolCallId": "toolu_1", "toolName": "bash", "isError": True,
          "content": [{"type": "text", "text": "ls: nope\n\n\nCommand exited with code 2"}]}


def payload(name: str, **fields: Any) -> dict[str, Any]:
    """An extension payload as rematch.ts builds it (``basePayload`` plus the event's fields)."""
    return {"hook_event_name": name, "harness_pid": 4242, "idle": False, "session_id": SID,
            "session_file": f"/home/u/.pi/agent/sessions/--p--/x_{SID}.jsonl", "cwd": "/work/p",
            "model": {"provider": "rig", "id": "claude-rig-1"}, **fields}


def test_every_payload_opens_its_session_first() -> None:
    [session] = live.records(payload("session_start", event={"reason": "startup"}), T)
    assert session == vocab.Session("", T, SID, "/work/p", "main", model=vocab.ModelRef("rig", "claude-rig-1"))


def test_the_harness_version_goes_on_the_session() -> None:
    [session] = live.records(payload("session_start", harness_version="0.73.1", event={}), T)
    assert session.harness_version == "0.73.1"


def test_an_input_keeps_pis_source() -> None:
    out = live.records(payload("input", event={"text": "fix it", "source": "rpc", "images": 0}), T)
    assert out[1:] == [vocab.UserMessage("", T, "fix it", source="rpc")]


def test_a_call_before_it_runs_is_a_started_call() -> None:
    event = payload("PreToolUse", pi_event="tool_call", tool_name="bash", tool_use_id="toolu_1",
                    tool_input={"command": "ls"})
    assert live.records(event, T)[1:] == [vocab.ToolStarted("", T, vocab.ToolCall("toolu_1", "bash", {"command": "ls"}))]


def test_messages_are_what_the_import_reads_from_the_same_message() -> None:
    """Live and import agree by construction: the importer's own functions, on the message pi stores."""
    assert live.records(payload("message_end", event={"message": ASSISTANT}), T)[1:] == [_assistant(ASSISTANT, T)]
    [res] = live.records(payload("message_end", event={"message": RESULT}), T)[1:]
    assert res == _tool_result(RESULT, T) and (res.is_error, res.error_class) == (True, "exit_nonzero")


def test_a_run_ends_by_its_last_stop() -> None:
    def end(stop: Any) -> list[vocab.Neutral]:
        return live.records(payload("agent_end", event={"messages": 3, "stop_reason": stop}), T)[1:]

    assert end("stop") == [vocab.RunEnd("", T, "stop")]
    assert end("aborted") == [vocab.RunEnd("", T, "aborted")]
    assert end("error") == [vocab.RunEnd("", T, "failure")]
    shutdown = live.records(payload("session_shutdown", event={"reason": "quit"}), T)[1:]
    # files_changed is hashed within the seed's 1 s of the extension's 2 s shutdown budget
    assert shutdown == [vocab.SessionEnded("", T, "quit", hash_budget_s=1.0)]


def test_a_user_message_with_no_input_event_is_the_imports_input() -> None:
    """omp's print mode emits no ``input``: the extension sends the user message, read as the import reads it."""
    message = {"role": "user", "content": [{"type": "text", "text": "Use the tools."}], "attribution": "user"}
    out = live.records(payload("message_end", event={"message": message}), T)[1:]
    assert out == [_user(message, T)] == [vocab.UserMessage("", T, "Use the tools.")]


def test_a_run_the_harness_continues_is_not_terminal() -> None:
    """omp's ``willContinue``, or pi's queued messages, at ``agent_end``: the run's end is not terminal."""
    def end(**more: Any) -> list[vocab.Neutral]:
        return live.records(payload("agent_end", event={"messages": 3, "stop_reason": "error", **more}), T)[1:]

    assert end(will_continue=True, pending=False) == [vocab.RunEnd("", T, "failure", terminal=False)]
    assert end(will_continue=None, pending=True) == [vocab.RunEnd("", T, "failure", terminal=False)]
    assert end(will_continue=False, pending=False) == [vocab.RunEnd("", T, "failure")]
    assert end() == [vocab.RunEnd("", T, "failure")]  # an older extension: terminal, as before
    assert end(will_continue="yes", pending=1) == [vocab.RunEnd("", T, "failure")]  # only true is true


def test_a_retry_fallback_switches_to_the_payloads_model() -> None:
    """omp's ``retry_fallback_applied``: the model it moved to is the payload's (ctx.model, read after)."""
    event = payload("retry_fallback_applied", event={"from": "rig/a", "to": "rig/b", "role": "default"})
    event["model"] = {"provider": "rig", "id": "b"}
    assert live.records(event, T)[1:] == [vocab.ModelSwitched("", T, vocab.ModelRef("rig", "b"), "retry_fallback")]
    assert live.records({**event, "model": None}, T) == []


def test_payloads_without_what_they_need_give_nothing() -> None:
    assert live.records({"hook_event_name": "input", "event": {"text": "x"}}, T) == []  # no session
    assert live.records(payload("input", event={"text": 3}), T) == []
    assert live.records(payload("PreToolUse", tool_name="bash"), T) == []  # no call id
    agent = {"role": "user", "content": "hi", "attribution": "agent"}  # not typed by a person
    assert live.records(payload("message_end", event={"message": agent}), T) == []
    assert live.records(payload("turn_end", event={}), T) == []  # not an event the extension sends


def test_the_host_asks_omp_only_about_omp() -> None:
    """The host routes ``live_records`` and ``hook_denial`` to the plugin that owns a harness (its
    ``default_locations`` name it): omp's hooks hold no test of the harness, and answer only ``omp``'s
    payloads beside the other plugins; pi's (the extension installed for pi sends ``pi``) go to rematch-pi."""
    import rematch_claude_code
    import rematch_codex
    import rematch_pi
    from rematch_trace.testing import make_host

    host = make_host([rematch_claude_code, rematch_codex, rematch_omp, rematch_pi])
    assert host.live_plugin("omp") == "rematch_omp" and host.live_plugin("claude_code") == "rematch_claude_code"
    assert host.live_plugin("pi") == "rematch_pi"
    event = payload("input", event={"text": "hi", "source": "interactive"})
    assert [type(r) for r in host.live("omp", event, T)] == [vocab.Session, vocab.UserMessage]
    assert all(vocab.field_errors(r) == [] for r in host.live("omp", event, T))
    assert host.live("claude_code", event, T) == []  # Claude Code's plugin reads it: not a payload of its own
    verdict = {"decision": "deny", "reason": "policy:x", "hook_event_name": "PreToolUse"}
    assert host.denial("omp", verdict) == live.denial(verdict)
    assert host.denial("claude_code", verdict) != live.denial(verdict)  # Claude Code's own deny output
    assert host.live("nobody", event, T) == [] and host.denial("nobody", verdict) is None
    assert host.live("pi", event, T) == host.live("omp", event, T) and host.denial("pi", verdict) == live.denial(verdict)


def test_the_deny_line_is_what_the_extension_reads() -> None:
    verdict = {"decision": "deny", "reason": "policy:credential-to-network", "explanation": "A credential.",
               "incident_id": "inc_1"}
    line = live.denial(verdict)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert orjson.loads(line) == {"block": True,
                                  "reason": "rematch: A credential. (policy:credential-to-network, incident inc_1)"}
    assert rematch_omp.hook_denial(verdict) == line
    # Whatever the verdict holds, one line of JSON (a reason not a string is not trusted).
    assert orjson.loads(live.denial({"reason": ["x"], "explanation": 7}))["reason"] == \
        "rematch: denied by rematch's policy (deny)"
