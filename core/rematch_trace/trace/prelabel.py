"""Pre-classification of user inputs, exactly as the trace schema gives it.

Precedence: mark > interrupt > revert > negation > reprompt > none.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rematch_trace.host.casefold import ascii_lowered, holds_folded

MARK_RE = re.compile(r"^/rematch\s+mark\s+(correction|preference|scope)\b", re.I)
#: The mark classes a ``/rematch mark <class>`` line may name (MARK_RE's alternatives).
MARK_CLASSES = ("correction", "preference", "scope")
#: Any ``/rematch mark`` line, whatever class it names: one with another class is kept as an
#: input (not a mark, not a dropped command), so a mistyped class loses no prompt.
_ANY_MARK_RE = re.compile(r"^/rematch\s+mark(?=\s|$)", re.I)
REVERT_RE = re.compile(r"\b(?:revert|undo|roll ?back|put it back|git restore)\b|\bgit checkout --(?:\s|$)", re.I)
NEGATION_RE = re.compile(
    r"^(?:no|nope|don't|do not|stop|not that|wrong|that's (?:not|wrong)|that is wrong|this is wrong"
    r"|incorrect|you didn't|you did not|not what i|i said|actually|instead)\b",
    re.I,
)
TOKEN_RE = re.compile(r"[a-z0-9]+")
# Claude Code's spellings of the mark command, read as ``/rematch mark <class>``.
_CC_MARK_RE = re.compile(r"^/(?:rematch:)?rematch-mark(?=\s|$)", re.I)
SKILL_RE = re.compile(r"(?:^|\s)/skill:([^\s/]+)(?=\s|$)")

REPROMPT_THRESHOLD = 0.6
REPROMPT_MIN_TOKENS = 6


def normalize_mark(text: str) -> str:
    """Spell ``/rematch-mark X`` and ``/rematch:rematch-mark X`` as ``/rematch mark X``.

    Like the mark pattern itself, only at the very start: the seed trims
    leading whitespace for negation alone.
    """
    m = _CC_MARK_RE.match(text)
    if m:
        return "/rematch mark" + text[m.end() :]
    return text


def tokens(text: str) -> set[str]:
    """The token set reprompt detection compares: ``[a-z0-9]+`` of the lowercased text."""
    # TOKEN_RE matches ASCII alone: every other character only ends a token, as "?" does.
    low = ascii_lowered(text)
    # What TOKEN_RE finds: the runs between the characters it does not match (one C pass each).
    return set(low.translate(_NOT_TOKEN).split())


#: Every ASCII character TOKEN_RE does not match, as a space.
_NOT_TOKEN = str.maketrans({c: " " for c in map(chr, range(128)) if TOKEN_RE.fullmatch(c) is None})


def jaccard(a: set[str], b: set[str]) -> float:
    """Jaccard similarity of two token sets (0 when both are empty)."""
    if not a and not b:
        return 0.0
    common = len(a & b)
    return common / (len(a) + len(b) - common)  # the union's size, without building the union


def is_reprompt(new_tokens: set[str], previous_tokens: Iterable[str] | None) -> bool:
    """Whether an input with ``new_tokens`` re-asks the previous input."""
    if previous_tokens is None or len(new_tokens) < REPROMPT_MIN_TOKENS:
        return False
    # A set (what the synthesizer keeps) is compared as it is; any other iterable as its set.
    previous = previous_tokens if type(previous_tokens) is set else set(previous_tokens)
    return jaccard(new_tokens, previous) >= REPROMPT_THRESHOLD


def prelabel_tokens(text: str, new_tokens: set[str], previous_tokens: Iterable[str] | None, interrupted: bool) -> str:
    """:func:`prelabel` with the token sets supplied (the synthesizer keeps them)."""
    text = normalize_mark(text)
    m = MARK_RE.match(text)  # as typed: the seed trims leading whitespace for negation only
    if m:
        return f"mark:{m.group(1).lower()}"
    if interrupted:
        return "interrupt"
    if _may_revert(text) and REVERT_RE.search(text):
        return "revert"
    if NEGATION_RE.match(text.lstrip()):
        return "negation"
    if is_reprompt(new_tokens, previous_tokens):
        return "reprompt"
    return "none"


# Every REVERT_RE match holds one of these, lowercased. That is a safe test for text
# holding none of the four characters Unicode case folding lets match an ASCII
# letter (the Kelvin sign as "k", a long s as "s": host.casefold.FOLDED).
_REVERT_WORDS = ("revert", "undo", "roll", "put it back", "git restore", "git checkout --")


def _may_revert(text: str) -> bool:
    """Whether :data:`REVERT_RE` can match ``text`` (a cheap test; ``True`` when unsure)."""
    if not text.isascii() and holds_folded(text):
        return True
    low = ascii_lowered(text)
    for word in _REVERT_WORDS:  # noqa: SIM110 - a plain loop: no generator to set up per call
        if word in low:
            return True
    return False


def prelabel(text: str, previous: str | None, interrupted: bool) -> str:
    """Pre-classify one input.

    :param text: the input's text.
    :param previous: the text of the previous input record, or ``None``.
    :param interrupted: the input arrived while the agent was running (on
        import: the previous assistant message stopped aborted).
    :return: ``"none"``, ``"interrupt"``, ``"revert"``, ``"negation"``,
        ``"reprompt"`` or ``"mark:<class>"``.
    """
    prev = tokens(previous) if previous is not None else None
    return prelabel_tokens(text, tokens(text), prev, interrupted)


def skills_in(text: str) -> list[str]:
    """The skill names of ``/skill:<name>`` tokens in ``text``, in order, once each."""
    seen: list[str] = []
    if "/skill:" not in text:  # every match holds it (the pattern is case-sensitive)
        return seen
    for name in SKILL_RE.findall(text):
        if name not in seen:
            seen.append(name)
    return seen


def is_dropped_command(text: str) -> bool:
    """Whether an imported input is a slash, ``!`` or ``%`` line the trace drops.

    Mark lines and lines invoking a skill with ``/skill:`` are kept. Like the
    mark pattern, it looks at the line as typed: ``"  /x"`` is text, not a command.
    """
    s = normalize_mark(text)
    if not s or s[0] not in "/!%":
        return False
    if MARK_RE.match(s) or _ANY_MARK_RE.match(s):
        return False
    return not s.startswith("/skill:")
