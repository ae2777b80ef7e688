"""rematch's Claude Code importer: the hooks of harness ``claude_code``.

Reads the transcripts Claude Code writes under ``$CLAUDE_CONFIG_DIR/projects``
(else ``~/.claude/projects``), versions 1.0 to 2.1, including the three
subagent layouts, and translates them into the core's neutral vocabulary.
"""

from __future__ import annotations

from typing import Any

from rematch_trace.host.hookspecs import hookimpl
from rematch_trace.host.lazy_hooks import lazy_hook

# Each hook imports the module that answers it on its first call: a rerun that finds nothing to
# read registers this plugin without loading its reader and translator.

__version__ = "0.1.0"
HARNESS = "claude_code"  # discover.HARNESS, without importing it

default_locations = lazy_hook(__name__, "default_locations", (), "discover:locations",
                              "``$CLAUDE_CONFIG_DIR/projects``, else ``~/.claude/projects``.")
detect_source = lazy_hook(__name__, "detect_source", ("path", "head", "hint"), "discover:detect",
                          "Claim Claude Code transcripts; ``agent-*.jsonl`` files are subagent sessions.")
read_transcript = lazy_hook(__name__, "read_transcript", ("source", "start"), "reader:read",
                            "Stream a claimed file's records from byte ``start`` (plain, gzip or zstd).")
conversation_items = lazy_hook(__name__, "conversation_items", ("source", "records"), "conversation:items",
                               "What was said and shown in a claimed file, for the conversation view and search.")
to_trace_records = lazy_hook(__name__, "to_trace_records", ("source", "records", "state"), "translate:translate",
                             "Translate a claimed file's records into neutral records.")
visible_entries = lazy_hook(__name__, "visible_entries", ("text",), "skills:offered_entries",
                            "The rematch entries a session's skill folders offer (the live ``SessionStart`` lists them).")
classify_action = lazy_hook(__name__, "classify_action", ("tool", "tool_input"), "actions:action_type",
                            "The security action type of a Claude Code tool call.")
# The core asks only the plugin that owns the harness (the one whose default_locations name it):
# no test of the harness in a hook.
live_records = lazy_hook(__name__, "live_records", ("event", "t"), "live:records",
                         "The neutral records of one Claude Code hook payload (live capture).")
harness_plugin_template = lazy_hook(
    __name__, "harness_plugin_template", (), "folder:template",
    "The template of Claude Code's plugin folder this package ships (``rematch hooks folder`` makes it whole).")


@hookimpl
def hook_denial(harness: str, verdict: dict[str, Any]) -> bytes | None:
    """Claude Code's documented ``PreToolUse`` deny output, as the fast hook client prints it."""
    from rematch_trace.live.rematch_hook import deny_output

    return deny_output(verdict, harness)
