"""The security action type of a Codex tool call."""

from __future__ import annotations

from typing import Any

SHELL_TOOLS = frozenset(
    {"shell", "shell_command", "local_shell", "local_shell_call", "exec_command", "write_stdin", "exec", "container.exec"}
)
EDIT_TOOLS = frozenset({"apply_patch"})
NETWORK_TOOLS = frozenset({"web_search", "web_search_call", "web.run", "web__run", "image_generation"})
SUBAGENT_TOOLS = frozenset({"spawn_agent", "send_input", "wait", "close_agent", "resume_agent", "spawn_agents_on_csv"})
READ_TOOLS = frozenset(
    {"view_image", "read_file", "list_dir", "grep_files", "skills.read", "skills.list", "read_thread_terminal"}
)
MCP_TOOLS = frozenset({"list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"})


def _script(tool_input: Any) -> str:
    """The script a shell call runs (the last argv element of ``bash -lc ...``)."""
    if not isinstance(tool_input, dict):
        return tool_input if isinstance(tool_input, str) else ""
    command = tool_input.get("command", tool_input.get("cmd"))
    if isinstance(command, list) and command and isinstance(command[-1], str):
        return command[-1]
    return command if isinstance(command, str) else ""


def classify(tool: str, tool_input: Any) -> str:
    """One of the action types for ``tool`` called with ``tool_input``."""
    if tool in SHELL_TOOLS:
        # Before the apply_patch tool, the model patched through the shell.
        return "file_edit" if _script(tool_input).lstrip().startswith("apply_patch") else "shell_exec"
    if tool in EDIT_TOOLS:
        return "file_edit"
    if tool in SUBAGENT_TOOLS:
        # Code mode has a `wait` of its own, on an exec cell rather than an agent.
        if tool == "wait" and isinstance(tool_input, dict) and "cell_id" in tool_input:
            return "shell_exec"
        return "subagent"
    if tool in NETWORK_TOOLS:
        return "network"
    if tool in READ_TOOLS:
        return "file_read"
    if tool in MCP_TOOLS or tool.startswith("mcp__"):
        return "mcp"
    # MCP tools were `<server>__<tool>` before v0.48, and namespaced (`server.tool`) later.
    if "__" in tool.strip("_") or (tool.count(".") == 1 and not tool.startswith(".")):
        return "mcp"
    return "other"
