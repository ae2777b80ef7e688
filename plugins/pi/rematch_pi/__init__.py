"""rematch importer for pi (``@earendil-works/pi-coding-agent``, formerly ``@mariozechner/pi-coding-agent``).

Registered under the ``rematch`` entry-point group as ``pi``. pi and omp (its fork) write one
session format and take one extension: this plugin finds pi's files (:mod:`.discover`) and
hands every other hook to ``rematch-omp``'s modules (:mod:`.shared`), under its own harness
name, so pi's sessions are ``pi`` from import and from live capture (docs/trace-schema.md,
Decisions).
"""

from __future__ import annotations

from rematch_trace.host.lazy_hooks import lazy_hook

__version__ = "0.1.0"
HARNESS = "pi"  # discover.HARNESS, without importing it

default_locations = lazy_hook(__name__, "default_locations", (), "discover:locations",
                              "pi's session folder (``$PI_CODING_AGENT_DIR/sessions``, else ``~/.pi/agent/sessions``).")
detect_source = lazy_hook(__name__, "detect_source", ("path", "head", "hint"), "discover:detect",
                          "Claim ``.jsonl`` / ``.jsonl.gz`` sessions pi wrote (its folders, else no omp title slot).")
read_transcript = lazy_hook(__name__, "read_transcript", ("source", "start"), "shared:read",
                            "The active branch of the session tree (a full read), or the lines after ``start``.")
conversation_items = lazy_hook(__name__, "conversation_items", ("source", "records"), "shared:items",
                               "What was said and shown in a claimed file, for the conversation view and search.")
to_trace_records = lazy_hook(__name__, "to_trace_records", ("source", "records", "state"), "shared:translate",
                             "Translate pi entries to neutral records (``rematch_omp.translate``).")
classify_action = lazy_hook(__name__, "classify_action", ("tool",), "shared:classify",
                            "Type a pi tool call by its tool name.")
# Asked only about harness ``pi`` (the core routes by default_locations): the extension installed
# for pi names ``pi`` as its adapter.
live_records = lazy_hook(__name__, "live_records", ("event", "t"), "shared:records",
                         "The records of one event rematch's extension handed over in pi (``rematch_omp.live``).")
hook_denial = lazy_hook(__name__, "hook_denial", ("verdict",), "shared:denial",
                        "The deny line the extension reads from ``rematch-hook pi`` (``{\"block\": true, ...}``).")
