"""The versions of the rules that shape an import's outputs, recorded on every ledger row.

A rule change that alters what a trace or an event stream holds (a credential
format found or no longer found, a risk feature added or narrowed) bumps its
number here; the next ``rematch import`` then redoes the sessions made under the
old number and says so. Kept apart from the rules themselves so that planning a
rerun (which compares these numbers, and opens no unchanged file) loads no rule.
"""

from __future__ import annotations

#: The redaction rules (:mod:`rematch_trace.security.redact`).
REDACTION_RULES = 1
#: The risk features (:mod:`rematch_trace.security.risk`): 2 stopped reading template
#: placeholders such as ``${token.href}`` as a variable holding a credential.
#: 3 reads shell commands with a shell parser (dynamic_execution, write_outside_root, deletions after cd,
#: one-liners), narrows .env templates and widens ~/.ssh, ~/.aws, ~/.gnupg to the folders themselves.
RISK_RULES = 3
#: What a trace keeps of a transcript beyond the rules above: 2 keeps a turn's 1-hour cache writes
#: (``turn_end.usage.cacheWrite1h``), so that a session imported before is costed right once redone.
TRACE_RULES = 2
