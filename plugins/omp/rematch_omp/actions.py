"""The security action type of omp's (and pi's) tools."""

from __future__ import annotations

SHELL_EXEC = "shell_exec"
FILE_READ = "file_read"
FILE_WRITE = "file_write"
FILE_EDIT = "file_edit"
NETWORK = "network"
MCP = "mcp"
SUBAGENT = "subagent"
OTHER = "other"

#: omp's built-in tool names (``tools/builtin-names.ts``) and pi's, by what they do.
TOOL_ACTIONS: dict[str, str] = {
    # eval runs code in a kernel (python/js): as able to act as a shell.
    "bash": SHELL_EXEC,
    "eval": SHELL_EXEC,
    "python": SHELL_EXEC,
    "ssh": SHELL_EXEC,
    "read": FILE_READ,
    "grep": FILE_READ,
    "search": FILE_READ,  # omp's legacy alias of grep
    "find": FILE_READ,
    "glob": FILE_READ,
    "ls": FILE_READ,
    "ast_grep": FILE_READ,
    "write": FILE_WRITE,
    "edit": FILE_EDIT,
    "multiedit": FILE_EDIT,
    "apply_patch": FILE_EDIT,
    "ast_edit": FILE_EDIT,
    "notebook": FILE_EDIT,
    "fetch": NETWORK,
    "web_fetch": NETWORK,
    "web_search": NETWORK,
    "browser": NETWORK,
    "github": NETWORK,
    "task": SUBAGENT,
}


def classify(tool: str) -> str:
    """The action type of an omp tool name; ``other`` for tools without side effects we model."""
    name = tool.strip().lower()
    action = TOOL_ACTIONS.get(name)
    if action is not None:
        return action
    # MCP tools are minted as ``mcp__<server>_<tool>``; older builds used ``mcp_``.
    if name.startswith("mcp_"):
        return MCP
    if name.startswith("gh_"):
        return NETWORK  # the gh_* tools call GitHub's API
    return OTHER
