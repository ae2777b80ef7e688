"""Gemini CLI's built-in tools, by the security action type their name says."""

from __future__ import annotations

#: Tool name -> action type (the names of Gemini CLI 0.61; older names kept where they differ).
ACTIONS: dict[str, str] = {
    "run_shell_command": "shell_exec",
    "read_file": "file_read",
    "read_many_files": "file_read",
    "list_directory": "file_read",
    "glob": "file_read",
    "grep_search": "file_read",
    "search_file_content": "file_read",
    "write_file": "file_write",
    "replace": "file_edit",
    "edit": "file_edit",
    "web_fetch": "network",
    "google_web_search": "network",
    "invoke_agent": "subagent",
    "delegate_to_agent": "subagent",
    "list_mcp_resources": "mcp",
    "read_mcp_resource": "mcp",
}


def classify(tool: str) -> str:
    """The action type of ``tool``; an MCP tool (``mcp_<server>_<tool>`` in 0.61, ``<server>__<tool>``
    before) is ``mcp``, anything else ``other``."""
    if not isinstance(tool, str):
        return "other"
    found = ACTIONS.get(tool)
    if found is not None:
        return found
    return "mcp" if tool.startswith("mcp_") or "__" in tool else "other"
