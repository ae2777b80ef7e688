"""rematch plugin for OpenAI Codex CLI rollouts (``$CODEX_HOME/sessions/**/rollout-*.jsonl``).

The hooks below only dispatch; the rules live in :mod:`.discover` (where
rollouts are and how to read them), :mod:`.translate` (lines to the neutral
vocabulary), :mod:`.results` (tool errors), :mod:`.usage` (token counts),
:mod:`.usertext` (typed versus injected user text), :mod:`.skills` (offered and
loaded skills) and :mod:`.actions` (security action types).
"""

from __future__ import annotations

from typing import Any

from rematch_trace.host.hookspecs import hookimpl
from rematch_trace.host.lazy_hooks import lazy_hook

# Each hook imports the module that answers it on its first call: a rerun that finds nothing to
# read registers this plugin without loading its reader and translator.

__version__ = "0.1.0"
HARNESS = "codex"  # discover.HARNESS, without importing it

default_locations = lazy_hook(__name__, "default_locations", (), "discover:locations",
                              "``$CODEX_HOME/sessions`` and ``$CODEX_HOME/archived_sessions`` (``~/.codex`` by default).")
detect_source = lazy_hook(__name__, "detect_source", ("path", "head", "hint"), "discover:detect",
                          "Claim Codex rollouts (``.jsonl`` or ``.jsonl.zst``) by name and first line.")
read_transcript = lazy_hook(__name__, "read_transcript", ("source", "start"), "discover:read",
                            "Stream a rollout, decompressing ``.zst`` on the fly, from byte ``start``.")
conversation_items = lazy_hook(__name__, "conversation_items", ("source", "records"), "conversation:items",
                               "What was said and shown in a claimed file, for the conversation view and search.")
to_trace_records = lazy_hook(__name__, "to_trace_records", ("source", "records", "state"), "translate:translate",
                             "Translate rollout lines into neutral records (see :mod:`.translate`).")
visible_entries = lazy_hook(__name__, "visible_entries", ("text",), "skills:offered_entries",
                            "The rematch entries a Codex catalog (AGENTS.md-era or ``<skills_instructions>``) "
                            "offers: skills with a ``rematch.json`` beside their file.")
classify_action = lazy_hook(__name__, "classify_action", ("tool", "tool_input"), "actions:classify",
                            "The security action type of a Codex tool call.")
# The core asks only the plugin that owns the harness (the one whose default_locations name it):
# no test of the harness in a hook.
live_records = lazy_hook(__name__, "live_records", ("event", "t"), "live:records",
                         "The neutral records of one Codex hook payload (live capture; see :mod:`.live`).")
harness_plugin_template = lazy_hook(
    __name__, "harness_plugin_template", (), "folder:template",
    "The template of Codex's plugin folder this package ships (``rematch hooks folder`` makes it whole).")


@hookimpl
def hook_denial(verdict: dict[str, Any]) -> bytes | None:
    """Codex's deny of the event the verdict answers (its ``hook_event_name``), as the fast hook
    client prints it: a ``PreToolUse``'s (``hookSpecificOutput.permissionDecision: "deny"`` and the
    reason), a ``PermissionRequest``'s (``hookSpecificOutput.decision: {"behavior": "deny", ...}``).
    """
    from rematch_trace.live.rematch_hook import deny_output

    event = verdict.get("hook_event_name")
    return deny_output(verdict, HARNESS, event if type(event) is str else "PreToolUse")
