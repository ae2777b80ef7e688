"""rematch importer for opencode sessions.

Registered under the ``rematch`` entry-point group as ``opencode``. opencode keeps its sessions
in ``$XDG_DATA_HOME/opencode``: a SQLite database (``opencode.db``, tables ``session``,
``message``, ``part``) in the versions since its storage moved there, and a tree of small JSON
files (``storage/session/<project>/<session>.json``, ``storage/message/<session>/<message>.json``,
``storage/part/<message>/<part>.json``) before. Both are sources *with members*
(``source_members``): the database with its write-ahead log, a session file with its message
and part files. See ``docs/opencode-format.md``.

The hooks only translate: finding and claiming (:mod:`.where`), reading (:mod:`.store`),
mapping to the neutral vocabulary (:mod:`.translate`), typing tool calls (:mod:`.actions`) and
the payloads of rematch's opencode plugin (:mod:`.live`, the plugin in ``plugin/rematch.ts``).
"""

from __future__ import annotations

from rematch_trace.host.lazy_hooks import lazy_hook

__version__ = "0.1.0"
HARNESS = "opencode"

default_locations = lazy_hook(__name__, "default_locations", (), "where:locations",
                              "opencode's data folder (``$XDG_DATA_HOME/opencode``, and the folder of ``$OPENCODE_DB``).")
detect_source = lazy_hook(__name__, "detect_source", ("path", "head"), "where:detect",
                          "Claim ``opencode*.db`` SQLite files and ``storage/session/*/ses_*.json`` session files.")
source_members = lazy_hook(__name__, "source_members", ("path",), "where:members",
                           "The database's write-ahead log; a session file's message and part files (and their folders).")
member_source = lazy_hook(__name__, "member_source", ("path",), "where:owner",
                          "The database of a ``-wal`` file; the session file of a message or part file.")
read_transcript = lazy_hook(__name__, "read_transcript", ("source", "start"), "store:read",
                            "Sessions and messages (each with its parts) of the database or the session tree.")
to_trace_records = lazy_hook(__name__, "to_trace_records", ("source", "records", "state"), "translate:translate",
                             "Translate opencode sessions and messages to neutral records; see "
                             ":mod:`rematch_opencode.translate`.")
conversation_items = lazy_hook(__name__, "conversation_items", ("source", "records"), "conversation:items",
                               "What was said and shown in a database's or a tree's sessions, for the conversation "
                               "view and search; see :mod:`rematch_opencode.conversation`.")
classify_action = lazy_hook(__name__, "classify_action", ("tool",), "actions:classify",
                            "Type an opencode tool call by its tool name.")
# The core asks only the plugin that owns the harness (the one whose default_locations name it).
live_records = lazy_hook(__name__, "live_records", ("event", "t"), "live:records",
                         "The records of one payload of rematch's opencode plugin; see :mod:`rematch_opencode.live`.")
hook_denial = lazy_hook(__name__, "hook_denial", ("verdict",), "live:denial",
                        "The deny line rematch's opencode plugin reads: ``{\"decision\": \"deny\", ...}``.")
