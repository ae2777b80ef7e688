"""rematch importer for Gemini CLI sessions.

Registered under the ``rematch`` entry-point group as ``gemini_cli``. Written
against the public plugin contract only: the hooks find Gemini CLI's session
folders (:mod:`.discover`), read a session (:mod:`.read`: the JSON-lines log of
0.61 and later, or the JSON document older versions rewrite whole), map its
records to the neutral vocabulary (:mod:`.translate`), type tool calls
(:mod:`.actions`) and translate live hook payloads (:mod:`.live`). The format is
described in ``docs/gemini-cli-format.md``.
"""

from __future__ import annotations

from collections.abc import Iterable

from rematch_trace.host.hookspecs import hookimpl
from rematch_trace.host.lazy_hooks import lazy_hook

# Each hook imports the module that answers it on its first call: every command imports every plugin.

__version__ = "0.1.0"
HARNESS = "gemini_cli"

default_locations = lazy_hook(__name__, "default_locations", (), "discover:locations",
                              "``$GEMINI_CLI_HOME/.gemini/tmp`` (else ``~/.gemini/tmp``): one folder per project.")
detect_source = lazy_hook(__name__, "detect_source", ("path", "head", "hint"), "discover:detect",
                          "Claim a ``session-*.jsonl`` / ``.json`` (or a subagent's) whose first record is a "
                          "session's metadata.")
read_transcript = lazy_hook(__name__, "read_transcript", ("source", "start"), "read:read",
                            "The log's lines after ``start``, or a document's records (see :mod:`rematch_gemini_cli.read`).")
to_trace_records = lazy_hook(__name__, "to_trace_records", ("source", "records", "state"), "translate:translate",
                             "Translate Gemini CLI records to neutral records; see :mod:`rematch_gemini_cli.translate`.")
classify_action = lazy_hook(__name__, "classify_action", ("tool",), "actions:classify",
                            "Type a Gemini CLI tool call by its tool name.")
conversation_items = lazy_hook(__name__, "conversation_items", ("source", "records"), "conversation:items",
                               "What was said and shown in a session, for the conversation view and search; see "
                               ":mod:`rematch_gemini_cli.conversation`.")


@hookimpl
def transcript_suffixes() -> Iterable[str]:
    """``.json``: the session documents Gemini CLI wrote before its JSON-lines log."""
    return (".json",)


# The core asks only the plugin that owns the harness (the one whose default_locations name it).
live_records = lazy_hook(__name__, "live_records", ("event", "t"), "live:records",
                         "The records of one Gemini CLI hook payload (its log read by the import's translator); "
                         "see :mod:`rematch_gemini_cli.live`.")
hook_denial = lazy_hook(__name__, "hook_denial", ("verdict",), "live:denial",
                        "Gemini CLI's deny of a ``BeforeTool``: ``{\"decision\": \"deny\", \"reason\": ...}``.")
