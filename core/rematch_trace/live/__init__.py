"""The live path: traces and security events written while a session runs, and verdicts before a tool runs.

Live capture (``capture.py``, ``hook_entry.py``, ``session_writer.py``...; see
docs/live-capture.md) writes as the harness works. ``ipc/`` is the framed JSON
codec and the v2 messages (stdlib only: a hook imports it on every tool call);
``client.py`` sends one request and fails open; ``service.py`` is the resident
process (``rematch serve``) with its registry of request-kind handlers;
``verdicts/`` holds the analysis providers, the ``localRulesOnly`` policy and
the model-verdict decoder; ``approvals.py`` holds invocations pending a human
decision. ``docs/ipc-v2.md`` is the IPC contract.
"""
