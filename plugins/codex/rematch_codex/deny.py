"""What a rematch hook prints to deny a Codex tool call: the fast hook client's own bytes.

The hook client (``rematch_hook.py``, standard library only, shipped by ``rematch-claude-code``)
keeps each harness's deny output in one table (``deny_output(reply, harness)``), so the client
and the in-process hook print the same bytes. It is found by path, not imported as a package:
this plugin does not depend on the Claude Code plugin.
"""

from __future__ import annotations

import importlib.util
from typing import Any

HARNESS = "codex"


def output(verdict: dict[str, Any]) -> bytes | None:
    """Codex's deny of the event the verdict answers (its ``hook_event_name``): a ``PreToolUse``'s
    (``hookSpecificOutput.permissionDecision: "deny"`` and the reason), a ``PermissionRequest``'s
    (``hookSpecificOutput.decision: {"behavior": "deny", "message": ...}``)."""
    from rematch_trace.live.install import hook_client

    path = hook_client()
    if path is None:
        return None
    spec = importlib.util.spec_from_file_location("rematch_codex._fast_hook_client", path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    event = verdict.get("hook_event_name")
    out: bytes = module.deny_output(verdict, HARNESS, event if type(event) is str else "PreToolUse")
    return out
