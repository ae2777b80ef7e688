"""Security action types of Claude Code's tools."""

from __future__ import annotations

from typing import Any

_ACTIONS: dict[str, str] = {
    "Bash": "shell_exec",
    "Read": "file_read",
    "Glob": "file_read",
    "Grep": "file_read",
    "LS": "file_read",
    "NotebookRead": "file_read",
    "Write": "file_write",
    "Edit": "file_edit",
    "MultiEdit": "file_edit",
    "NotebookEdit": "file_edit",
    "WebFetch": "network",
    "WebSearch": "network",
    "Task": "subagent",
    "Agent": "subagent",
}


def action_type(tool: str, tool_input: Any = None) -> str:
    """The action type of a Claude Code tool call, from its name alone.

    ``Task`` was renamed ``Agent`` in 2.1; both spawn a subagent. MCP tools are
    named ``mcp__<server>__<tool>``.
    """
    if not isinstance(tool, str):
        return "other"
    found = _ACTIONS.get(tool)
    if found is not None:
        return found
    if tool.startswith("mcp__"):
        return "mcp"
    return "other"
