"""Tool errors read from Codex's output text and structured events."""

from __future__ import annotations

import pytest

from rematch_codex.results import classify_output, output_text, structured


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Exit code: 0\nWall time: 1 seconds\nOutput:\nok\n", (False, None)),
        ("Exit code: 1\nWall time: 1 seconds\nOutput:\nno match\n", (True, "exit_nonzero")),
        ("Exit code: 124\nWall time: 10.2 seconds\nOutput:\ncommand timed out after 10180 milliseconds\n", (True, "timeout")),
        ("Chunk ID: ab\nWall time: 0.1 seconds\nProcess exited with code 0\nOutput:\n", (False, None)),
        ("Chunk ID: ab\nWall time: 0.1 seconds\nProcess exited with code 127\nOutput:\nnope\n", (True, "exit_nonzero")),
        ("Chunk ID: ab\nWall time: 0 seconds\nProcess exited with code 1\nOutput:\nbwrap: Failed to make / slave", (True, "sandbox")),
        ("Chunk ID: ab\nWall time: 10 seconds\nProcess running with session ID 7\nOutput:\n", (False, None)),
        ('{"output":"x\\n","metadata":{"exit_code":0,"duration_seconds":0.1}}', (False, None)),
        ('{"output":"sed: no such file\\n","metadata":{"exit_code":1,"duration_seconds":0.0}}', (True, "exit_nonzero")),
        ("command timed out after 1000 milliseconds", (True, "timeout")),
        ("failed in sandbox MacosSeatbelt with execution error: sandbox denied exec error, exit code: 2", (True, "sandbox")),
        ("failed in sandbox None with execution error: command timed out", (True, "timeout")),
        ("exec command rejected by user", (True, "rejected")),
        ("patch rejected by user", (True, "rejected")),
        ("Command blocked by PreToolUse hook: rematch: no (policy:x). Command: curl x", (True, "rejected")),
        ("Wall time: 3.1 seconds\naborted by user", (True, "interrupted")),
        ("aborted by user after 2.0s", (True, "interrupted")),
        ("apply_patch verification failed: Failed to find expected lines in a.py", (True, None)),
        ("failed to parse function arguments: missing field `command`", (True, None)),
        ("unsupported call: frobnicate", (True, None)),
        ("tool call error: tool call failed for `docs/search`", (True, None)),
        ("Script failed\nWall time 0.0 seconds\nOutput:\nexec cell 3 not found", (True, None)),
        ('Script completed\nWall time 1 seconds\nOutput:\n{"exit_code":2}', (True, "exit_nonzero")),
        ("Plan updated", (False, None)),
        ("writing outside of the project; rejected by user approval settings", (True, "rejected")),
        ("src/events.rs:12: exec command rejected by user\n" + "more grep output\n" * 40, (False, None)),
        ("ordinary output\nthat says exec command rejected by user on line two", (False, None)),
    ],
)
def test_output_text(text: str, expected: tuple[bool, str | None]) -> None:
    assert classify_output(text) == expected


def test_output_items_are_joined() -> None:
    items = [{"type": "input_text", "text": "a"}, {"type": "input_image", "image_url": "x"}, {"type": "input_text", "text": "b"}]
    assert output_text(items) == "a\nb"
    assert output_text(None) == "" and output_text(5) == ""
    assert classify_output("", {"content": "x", "success": False}) == (True, None)


def test_structured_events() -> None:
    assert structured("exec_command_end", {"exit_code": 0, "status": "completed"}) == (False, None)
    assert structured("exec_command_end", {"exit_code": 2, "status": "failed"}) == (True, "exit_nonzero")
    assert structured("exec_command_end", {"exit_code": 124, "aggregated_output": "timed out"}) == (True, "timeout")
    assert structured("exec_command_end", {"status": "declined"}) == (True, "rejected")
    assert structured("exec_command_end", {"status": "weird"}) is None
    assert structured("patch_apply_end", {"success": True}) == (False, None)
    assert structured("patch_apply_end", {"success": False}) == (True, "tool_error")
    assert structured("patch_apply_end", {"success": "?"}) is None
    assert structured("mcp_tool_call_end", {"result": {"Ok": {"content": [], "isError": True}}}) == (True, "tool_error")
    assert structured("mcp_tool_call_end", {"result": {"Ok": {"content": []}}}) == (False, None)
    assert structured("mcp_tool_call_end", {"result": {"Err": "boom"}}) == (True, None)
    assert structured("mcp_tool_call_end", {"result": "junk"}) is None
