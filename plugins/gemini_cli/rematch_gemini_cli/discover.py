"""Where Gemini CLI keeps sessions, and claiming its files from their first bytes.

Gemini CLI keeps one folder per project under ``~/.gemini/tmp/`` (``GEMINI_CLI_HOME``
replaces the home folder), named by a short project name (0.61) or the SHA-256 of the
project's root (older versions), with the sessions in its ``chats/`` folder:
``session-<start minute>-<id8>.jsonl`` (0.61: a JSON-lines log), ``.json`` (older: a JSON
document rewritten whole), and a subagent's ``chats/<parent session id>/<id>.jsonl``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

from rematch_trace.host.source import Location, Source

HARNESS = "gemini_cli"
#: A document's first keys, as Gemini CLI writes them (pretty-printed or not).
_DOC_KEYS = re.compile(rb'^\s*\{\s*"sessionId"\s*:\s*"[^"]*"\s*,\s*"projectHash"\s*:\s*"[0-9a-f]*"')


def locations() -> list[Location]:
    """``$GEMINI_CLI_HOME/.gemini/tmp`` (else ``~/.gemini/tmp``): one folder per project, ``chats/`` in each."""
    return [Location(HARNESS, sessions_root(os.environ, Path.home()))]


def sessions_root(env: Mapping[str, str], home: Path) -> Path:
    """``<GEMINI_CLI_HOME or home>/.gemini/tmp``."""
    base = env.get("GEMINI_CLI_HOME") or ""
    return (Path(base) if base else home) / ".gemini" / "tmp"


def _first_record(head: bytes) -> dict[str, object] | None:
    """The first line of a log as JSON, when the head holds it whole."""
    line, nl, _ = head.partition(b"\n")
    if not nl:
        return None
    try:
        doc = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def detect(path: Path, head: bytes, hint: str | None) -> Source | None:
    """A source for a Gemini CLI session file, or ``None``.

    A log (``.jsonl``) is claimed when its first line is a session's metadata
    (``sessionId`` and ``projectHash``, both strings); a document (``.json``) when
    it opens with those two keys. Its ``kind`` (``subagent``) or a ``chats/<id>/``
    folder makes it a subagent's.
    """
    name = path.name
    if name.endswith(".jsonl"):
        first = _first_record(head)
        if first is None:
            # A first line longer than the head (a subagent's many directories): its opening keys say it.
            if not _DOC_KEYS.match(head):
                return None
            sub = b'"kind":"subagent"' in head
        elif not isinstance(first.get("sessionId"), str) or not isinstance(first.get("projectHash"), str):
            return None
        else:
            sub = first.get("kind") == "subagent"
    elif name.endswith(".json"):
        if not _DOC_KEYS.match(head):
            return None
        sub = b'"kind": "subagent"' in head or b'"kind":"subagent"' in head
    else:
        return None
    sub = sub or path.parent.parent.name == "chats"
    # A document is rewritten whole as the chat grows: continued by its records, not its bytes.
    return Source(HARNESS, path, agent_kind="sub" if sub else "main", rewritten=name.endswith(".json"))
