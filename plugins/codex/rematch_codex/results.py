"""Tool outcomes: Codex writes no success flag, so errors are read from the output.

Codex serialises a tool's output as a bare string or a list of content items;
the ``success`` it keeps internally never reaches the rollout. What it does
write, per tool family:

* ``shell`` (JSON mode): ``{"output": "...", "metadata": {"exit_code": N, ...}}``;
* ``shell_command`` and freeform tools: ``Exit code: N\\nWall time: ...\\nOutput:\\n...``;
* unified exec (``exec_command``/``write_stdin``): ``Chunk ID: ...\\nWall time: ...\\n
  Process exited with code N`` (or ``Process running with session ID S``);
* fixed phrases for timeouts, rejections, sandbox denials and interrupts.

Extended-history files also hold structured events (``exec_command_end``,
``patch_apply_end``, ``mcp_tool_call_end``) which, when present, win.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from rematch_trace.host.vocab import OUTPUT_HEAD_CHARS as HEAD_CHARS

#: (is_error, error_class); error_class ``None`` lets the core classify the head.
Outcome = tuple[bool, "str | None"]


_OK: Outcome = (False, None)
#: What Codex writes as the output of a call a ``PreToolUse`` hook denied (0.169: "Command blocked by
#: PreToolUse hook: <reason>. Command: <the command>").
_HOOK_BLOCKED = ("command blocked by pretooluse hook", "tool call blocked by pretooluse hook")
_EXIT_LINE = re.compile(r"^Exit code: (-?\d+)")
_PROCESS_EXIT = re.compile(r"^Process exited with code (-?\d+)", re.M)
_JSON_EXIT = re.compile(r'"exit_code"\s*:\s*(-?\d+)')
_INTERRUPTED = re.compile(r"^(?:Wall time: [\d.]+ seconds\n)?aborted by user")
# Phrases that open a failed call's output (tools/events.rs, handlers/mod.rs, registry.rs).
_FAILURE_OPENERS = (
    "failed to parse function arguments",
    "unsupported call",
    "unsupported custom tool call",
    "execution error",
    "apply_patch verification failed",
    "error: failed to find expected lines",
    "failed to find expected lines",
    "invalid patch",
    "err: ",
    "tool call error",
    "script failed",
)


def output_text(output: Any) -> str:
    """The text of a tool output: a string, or the texts of a content-item list."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        parts = [
            item["text"] for item in output if isinstance(item, dict) and isinstance(item.get("text"), str)
        ]
        return "\n".join(parts)
    if isinstance(output, dict):
        content = output.get("content")
        if isinstance(content, (str, list)):
            return output_text(content)
    return ""


def _exit_outcome(code: int, body: str) -> Outcome:
    if code == 0:
        return _OK
    head = body[:512].lower()
    if code == 124 or "timed out" in head:
        return (True, "timeout")
    if head.startswith("bwrap:") or "sandbox denied" in head:
        return (True, "sandbox")
    return (True, "exit_nonzero")


def _body_after(text: str, marker: str = "Output:\n") -> str:
    i = text.find(marker, 0, 1024)
    return text[i + len(marker) :] if i >= 0 else ""


def classify_output(text: str, raw: Any = None) -> Outcome:
    """Whether a tool output says the call failed, and why when it says so.

    :param text: the output's text (see :func:`output_text`).
    :param raw: the output as recorded, for the ``{"success": bool}`` shape a
        few writers use.
    """
    if isinstance(raw, dict) and isinstance(raw.get("success"), bool) and not raw["success"]:
        return (True, None)
    head = text[:HEAD_CHARS]
    stripped = head.lstrip()
    if stripped.startswith('{"output"') or stripped.startswith('{"metadata"'):
        return _json_shell(text)
    lower = stripped[:600].lower()
    if _INTERRUPTED.match(stripped):
        return (True, "interrupted")
    first_line = lower.split("\n", 1)[0]
    # Rejections are a short fixed sentence; a long output merely quoting one is not.
    if len(stripped) < 400 and ("rejected by user" in first_line or "declined by user" in first_line):
        return (True, "rejected")
    if lower.startswith(_HOOK_BLOCKED):
        # A PreToolUse hook's deny (Codex 0.124+): the call never ran; the hook's reason follows.
        return (True, "rejected")
    if lower.startswith("failed in sandbox"):
        return (True, "timeout" if "timed out" in first_line else "sandbox")
    if lower.startswith("command timed out"):
        return (True, "timeout")
    m = _EXIT_LINE.match(stripped)
    if not m and (lower.startswith("chunk id:") or lower.startswith("wall time:")):
        m = _PROCESS_EXIT.search(stripped, 0, 400)
        if not m:
            return _OK
    if m:
        code = int(m.group(1))
        # (the body is cut out only to read a failure's cause)
        return _OK if code == 0 else _exit_outcome(code, _body_after(stripped))
    if lower.startswith(_FAILURE_OPENERS):
        return (True, None)
    if lower.startswith("script completed") or lower.startswith("script running"):
        # Code-mode exec: a nested command's exit code shows as JSON in the output.
        m = _JSON_EXIT.search(head)
        if m and int(m.group(1)) != 0:
            return (True, "exit_nonzero")
    return _OK


def _json_shell(text: str) -> Outcome:
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        doc = None
    if not isinstance(doc, dict):
        m = _JSON_EXIT.search(text[:HEAD_CHARS]) or _JSON_EXIT.search(text[-512:])
        return _exit_outcome(int(m.group(1)), "") if m else _OK
    meta = doc.get("metadata")
    code = meta.get("exit_code") if isinstance(meta, dict) else None
    inner = doc.get("output")
    body = inner if isinstance(inner, str) else ""
    if isinstance(code, int) and not isinstance(code, bool):
        return _exit_outcome(code, body)
    return classify_output(body) if body else _OK


def structured(kind: str, payload: dict[str, Any]) -> Outcome | None:
    """The outcome an ``exec_command_end``/``patch_apply_end``/``mcp_tool_call_end`` states."""
    if kind == "exec_command_end":
        status = payload.get("status")
        code = payload.get("exit_code")
        if status == "declined":
            return (True, "rejected")
        if isinstance(code, int) and not isinstance(code, bool):
            out = payload.get("aggregated_output")
            return _exit_outcome(code, out if isinstance(out, str) else "")
        if status == "failed":
            return (True, None)
        return _OK if status == "completed" else None
    if kind == "patch_apply_end":
        if payload.get("status") == "declined":
            return (True, "rejected")
        ok = payload.get("success")
        return None if not isinstance(ok, bool) else (_OK if ok else (True, "tool_error"))
    if kind == "mcp_tool_call_end":
        result = payload.get("result")
        if not isinstance(result, dict):
            return None
        if "Err" in result:
            return (True, None)
        ok = result.get("Ok")
        if isinstance(ok, dict):
            flag = ok.get("isError", ok.get("is_error"))
            return (True, "tool_error") if flag is True else _OK
    return None
