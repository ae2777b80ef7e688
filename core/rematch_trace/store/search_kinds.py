"""The kinds of record the search index holds, in a module of their own: ``rematch search --kind``
names them without importing the index (``rematch --help`` loads every command's module)."""

from __future__ import annotations

#: The kinds a hit may have, as ``rematch search --json`` names them.
KINDS = ("prompt", "assistant", "tool", "output", "blocked", "mark")

__all__ = ["KINDS"]
