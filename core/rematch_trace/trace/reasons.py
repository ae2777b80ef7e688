"""The flag reasons, in their fixed order.

A module of its own: readers of the ledger (``rematch flagged``) name the reasons without importing the
flag rules and the attrs classes they keep their state in.
"""

from __future__ import annotations

#: Every reason a session can be flagged for, in the order they are listed.
REASONS = ("redirect", "error_cluster", "mark")
