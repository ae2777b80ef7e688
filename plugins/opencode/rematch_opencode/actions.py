"""The security action type of opencode's built-in tools."""

from __future__ import annotations

#: opencode's built-in tool names, by what they do.
TOOL_ACTIONS: dict[str, str] = {
    "bash": "shell_exec",
    "read": "file_read",
    "glob": "file_read",
    "grep": "file_read",
    "list": "file_read",
    "lsp": "file_read",
    "write": "file_write",
    "edit": "file_edit",
    "multiedit": "file_edit",
    "patch": "file_edit",
    "apply_patch": "file_edit",
    "webfetch": "network",
    "websearch": "network",
    "codesearch": "network",
    "task": "subagent",
}


def classify(tool: str) -> str:
    """The action type of ``tool`` (``other`` for a tool this table does not know, MCP tools included:
    opencode names them ``<server>_<tool>``, which no built-in name rules out)."""
    return TOOL_ACTIONS.get(tool, "other") if isinstance(tool, str) else "other"
