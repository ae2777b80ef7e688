"""rematch importer for omp (oh-my-pi) session transcripts, and the reader of the format omp shares with pi.

Registered under the ``rematch`` entry-point group as ``omp``. Upstream pi's sessions are
harness ``pi``, registered by the ``rematch-pi`` distribution, which reads them with this
package's modules (one format, two harnesses: docs/trace-schema.md, Decisions). The hooks only
translate: reading the active branch of a session tree (:mod:`.tree`), mapping
its entries to the core's neutral vocabulary (:mod:`.translate`), finding the
files (:mod:`.discover`) and typing tool calls (:mod:`.actions`).
"""

from __future__ import annotations

from rematch_trace.host.lazy_hooks import lazy_hook

# Each hook imports the module that answers it on its first call: a rerun that finds nothing to
# read registers this plugin without loading its reader and translator.

__version__ = "0.1.0"
HARNESS = "omp"  # discover.HARNESS, without importing it

default_locations = lazy_hook(__name__, "default_locations", (), "discover:locations",
                              "omp's session folders (with its env overrides and profiles) and its archive.")
detect_source = lazy_hook(__name__, "detect_source", ("path", "head", "hint"), "discover:detect",
                          "Claim ``.jsonl`` / ``.jsonl.gz`` sessions omp wrote (its folders, else its title slot).")
read_transcript = lazy_hook(__name__, "read_transcript", ("source", "start"), "tree:read",
                            "The active branch of the session tree (a full read), or the lines after ``start``.")
conversation_items = lazy_hook(__name__, "conversation_items", ("source", "records"), "conversation:items",
                               "What was said and shown in a claimed file, for the conversation view and search.")
to_trace_records = lazy_hook(__name__, "to_trace_records", ("source", "records", "state"), "translate:translate",
                             "Translate omp entries to neutral records; see :mod:`rematch_omp.translate`.")
classify_action = lazy_hook(__name__, "classify_action", ("tool",), "actions:classify",
                            "Type an omp tool call by its tool name.")
# The core asks only the plugin that owns the harness (the one whose default_locations name it; the
# extension installed for pi sends ``pi``, which rematch-pi owns): no test of the harness in a hook.
live_records = lazy_hook(__name__, "live_records", ("event", "t"), "live:records",
                         "The records of one event rematch's extension handed over in omp; see :mod:`rematch_omp.live`.")
hook_denial = lazy_hook(__name__, "hook_denial", ("verdict",), "live:denial",
                        "The deny line the extension reads from ``rematch-hook omp`` (``{\"block\": true, ...}``).")
