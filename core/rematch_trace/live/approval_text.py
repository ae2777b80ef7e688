"""What a person approving a held call is shown of it: the whole redacted command, or loudly not.

The event stream keeps a call's summary cut at 200 characters; an approval
cannot: a benign comment would push ``curl … | sh`` out of view. A held call
keeps its **whole** redacted text in memory (never logged, never written; it
ends with the hold), up to :data:`KEPT_CHARS`. The control channel shows it in
one reply bounded in bytes: whole when it fits, else its head and its tail,
the number of characters between them, and every part of that middle that
looks risky (:data:`_RISKY`: a URL, a pipe into an interpreter, a delete, an
``eval``, a credential's path...) in full. The command prints the count as a
warning of its own, never as text the agent could have typed.
"""

from __future__ import annotations

import re
from typing import Any

import attrs
import orjson

from rematch_trace.live.ipc.messages import MAX_COMMAND_PART, MAX_RISKY_PART, MAX_RISKY_PARTS
from rematch_trace.security.events import summarize
from rematch_trace.security.redact import Redactor

#: Characters of a held call's text kept in memory: past it the head and tail are kept, the middle counted.
KEPT_CHARS = 65_536
#: Bytes (as JSON) the shown head and tail may take in one ``show_approval`` reply (its bound is 16 KiB),
#: and in each approval a ``list_approvals`` reply lists (up to 16 in one reply).
SHOWN_BYTES = MAX_COMMAND_PART
LISTED_BYTES = 300
#: Risky parts of a hidden middle: how many are shown, and each part's longest text.
MAX_RISKY = MAX_RISKY_PARTS
RISKY_CHARS = MAX_RISKY_PART

#: What makes a part of a command risky to leave unseen: where code or data comes from or goes, what
#: runs it, what deletes, and the paths of credentials.
_RISKY = re.compile(
    r"[a-z][a-z0-9+.-]*://|/dev/(?:tcp|udp)/|\|\s*(?:sudo\s+)?(?:ba|da|z|k)?sh\b|\|\s*(?:python\d*|perl|node|ruby)\b"
    r"|\b(?:curl|wget|nc|ncat|socat|scp|rsync|ssh|eval|exec|base64|xxd|rm|shred|dd|mkfs|chmod|chown|crontab)\b"
    r"|\.ssh\b|\.aws\b|\.env\b|\.netrc\b|\.git-credentials\b|id_rsa|id_ed25519|\b(?:token|secret|passw)",
    re.IGNORECASE,
)
#: Where a command splits into parts: lists' control operators and newlines, not pipes (a pipeline is shown
#: whole: ``curl … | sh`` is one risk). A rough shell reading, for display only.
_PARTS = re.compile(r"\n|;|&&|\|\||(?<![&|>])&(?![&>])")


@attrs.frozen
class Shown:
    """A held call's text as one reply carries it."""

    #: Characters of the whole (kept) text, and those between ``head`` and ``tail`` left unshown.
    chars: int
    head: str
    tail: str
    hidden: int
    #: Parts of the unshown middle that look risky, each in full (up to :data:`RISKY_CHARS`), and how many
    #: there are in all (more than shown: the agent may have put decoys first).
    risky: tuple[str, ...]
    risky_total: int


def held_text(redactor: Redactor, tool_class: str, tool_name: str, tool_input: Any) -> tuple[str, int]:
    """The redacted text of a held call (its whole command, paths or input), and how many characters of it
    were dropped from its middle to keep it (0: kept whole).

    Redacted in pieces around any cut: what is kept never holds a credential
    that the cut split (each piece is redacted with a margin that is then dropped).
    """
    raw = summarize(tool_class, tool_name, tool_input)
    if len(raw) <= KEPT_CHARS:
        return redactor.redact(raw)[0], 0
    half = KEPT_CHARS // 2
    head = redactor.redact(raw[: half + 1024])[0]
    tail = redactor.redact(raw[-(half + 1024):])[0]
    # Drop the margins (a placeholder cut in two is dropped whole by the redaction of the other side).
    return head[:half] + tail[-half:], len(raw) - 2 * half


def _size(text: str) -> int:
    return len(orjson.dumps(text))


def shown(text: str, missing: int = 0, budget: int = SHOWN_BYTES, *, risky: bool = True) -> Shown:
    """What a control reply shows of ``text`` (``missing``: characters dropped from its middle to keep it).

    ``risky``: look for the risky parts of an unshown middle (a listing leaves them to ``show_approval``).
    """
    total = len(text) + missing
    if _size(text) <= budget and missing == 0:
        return Shown(total, text, "", 0, (), 0)
    lo, hi = 0, len(text) // 2
    while lo < hi:  # the longest head and tail of equal length that fit the budget
        mid = (lo + hi + 1) // 2
        if _size(text[:mid]) + _size(text[len(text) - mid:]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    lo = min(lo, MAX_COMMAND_PART)
    head, tail = text[:lo], text[len(text) - lo:] if lo else ""
    middle = text[lo:len(text) - lo]
    parts, count = risky_parts(middle) if risky else ((), 0)
    return Shown(total, head, tail, total - len(head) - len(tail), parts, count)


def risky_parts(middle: str) -> tuple[tuple[str, ...], int]:
    """The parts of ``middle`` (split at control operators) that :data:`_RISKY` matches, each whole or cut
    (the first :data:`MAX_RISKY`), and how many there are."""
    found: list[str] = []
    count = 0
    for part in _PARTS.split(middle):
        part = part.strip()
        if not part or part.startswith("#") or not _RISKY.search(part):
            continue
        count += 1
        if len(found) >= MAX_RISKY:
            continue
        if len(part) > RISKY_CHARS:
            m = _RISKY.search(part)
            assert m is not None
            start = max(0, min(m.start() - RISKY_CHARS // 3, len(part) - RISKY_CHARS))
            part = part[start:start + RISKY_CHARS]
        found.append(part)
    return tuple(found), count


__all__ = ["KEPT_CHARS", "LISTED_BYTES", "MAX_RISKY", "RISKY_CHARS", "SHOWN_BYTES", "Shown", "held_text", "risky_parts", "shown"]
