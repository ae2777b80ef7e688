"""Anchored scanning: whether a rule's pattern occurs, trying it only where it can start.

``pattern.search(text)`` tries the pattern at every position of the text; for
a case-insensitive alternation led by ``\\b`` the engine gets no first-character
filter, so a 1 KB shell command costs tens of microseconds per rule. But every
rule here starts with (or within two characters of) a literal word: ``rm``,
``curl``, ``git``... So a rule is split into its alternatives (:class:`Alt`),
each with the lower-case *anchors* one of which every match holds at most
``back`` characters after its start. The anchors are found with ``str.find``
on the lower-cased text (C speed), and the alternative is tried with
``pattern.match`` only there. Since ``search`` finds a match if and only if
``match`` succeeds at some position, and the positions tried include every
position a match can start at, the answer is the same as ``search``'s.

Linear time: an alternative that scans an unbounded stretch after its lead
word (the rest of a command, ``[^\\n;|&]*``, or a run of flags,
``(?:-\\S+\\s+)*``) gives its ``lead`` and ``span`` patterns. When it fails at
a start, a later start whose lead ends within the stretch the failed one
examined (from the end of its lead to the end of the span) could reach only
positions the failed one reached, so it is skipped rather than tried again:
a text of a thousand ``find`` words costs a thousand short steps, not a
million. Patterns whose own steps backtrack over a run (``[a-z]*r[a-z]*\\s``)
are written with lookaheads and possessive repeats instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs


@attrs.frozen
class Alt:
    """One alternative of a rule, and where it can start.

    :param pattern: the alternative, compiled with the rule's flags.
    :param anchors: lower-case literals; every match holds one of them, starting
        at most ``back`` characters after the match's start.
    :param back: how far before an anchor a match may start.
    :param lead: the bounded part a match starts with (its end is where the
        unbounded stretch begins); with ``span``.
    :param span: ``lead`` and the unbounded stretch after it, taken whole
        (possessive): the positions a failed start examined.
    :param needs: a lower-case literal every match holds somewhere (a cheap
        test that skips the alternative when absent).
    """

    pattern: re.Pattern[str]
    anchors: tuple[str, ...]
    back: int = 0
    lead: re.Pattern[str] | None = None
    span: re.Pattern[str] | None = None
    needs: str | None = None


def alt(pattern: str, anchors: Iterable[str], *, back: int = 0, flags: int = 0, stretch: str | None = None,
        tail: str = "", needs: str | None = None) -> Alt:
    """An :class:`Alt`: ``pattern`` alone, or ``pattern`` (the lead) + ``stretch`` + ``tail``.

    ``stretch`` is a greedy unbounded repeat (``[^\\n;|&]*``, ``(?:-\\S+\\s+)*``);
    its possessive form delimits what a failed start examined.
    """
    anchors = tuple(anchors)
    assert all(a == a.lower() and a.isascii() and a for a in anchors), anchors
    if stretch is None:
        return Alt(re.compile(pattern, flags), anchors, back, needs=needs)
    assert stretch.endswith("*"), stretch
    return Alt(
        re.compile(pattern + stretch + tail, flags),
        anchors,
        back,
        re.compile(pattern, flags),
        re.compile(f"(?:{pattern}){stretch}+", flags),
        needs,
    )


def occurs(alts: tuple[Alt, ...], text: str, low: str) -> bool:
    """Whether any of ``alts`` matches somewhere in ``text`` (``low`` is :func:`lowered` ``text``)."""
    for a in alts:
        if a.needs is not None and a.needs not in low:
            continue
        match = a.pattern.match
        back = a.back
        for anchor in a.anchors:
            k = low.find(anchor)
            if k < 0:
                continue
            if a.span is not None:
                if _spanned(a, text, low, anchor, k):
                    return True
            elif back == 0:
                while k >= 0:
                    if match(text, k) is not None:
                        return True
                    k = low.find(anchor, k + 1)
            else:
                while k >= 0:
                    for p in range(k - back if k > back else 0, k + 1):
                        if match(text, p) is not None:
                            return True
                    k = low.find(anchor, k + 1)
    return False


def _spanned(a: Alt, text: str, low: str, anchor: str, k: int) -> bool:
    """Whether ``a`` matches at a start near an occurrence of ``anchor`` from ``k`` on, skipping dominated starts."""
    assert a.lead is not None and a.span is not None
    match, lead, span, back = a.pattern.match, a.lead.match, a.span.match, a.back
    # Starts are tried in increasing order; one before ``until`` whose lead
    # ends in [lead_end, until] is dominated by the failed start that set them.
    until = -1
    lead_end = 0
    while k >= 0:
        for p in range(k - back if k > back else 0, k + 1):
            if p < until:
                m = lead(text, p)
                if m is None or lead_end <= m.end() <= until:
                    continue
            if match(text, p) is not None:
                return True
            s = span(text, p)
            if s is not None:
                until = s.end()
                m = lead(text, p)
                lead_end = m.end() if m is not None else until
        k = low.find(anchor, k + 1)
    return False


__all__ = ["Alt", "alt", "occurs"]
