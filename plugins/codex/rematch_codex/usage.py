"""Token usage per model call from ``token_count`` events, each counted once.

``token_count.info.total_token_usage`` is cumulative for the session and
``last_token_usage`` is the latest request. Codex repeats token_count events
(same totals after each user message, after a resume, in a fork's copied
history), so the usage of a call is the *advance* of the cumulative total:
totals that did not advance are skipped, and ``last_token_usage`` is used only
when totals are missing or roll back (a restarted counter).

A usage vector is ``[input, cached_input, output, cache_write, total]`` as Codex
counts them: ``input`` *includes* ``cached_input`` (OpenAI's convention).
"""

from __future__ import annotations

from typing import Any

from rematch_trace.host.vocab import Usage


def _count(v: Any) -> int:
    """A token count as an int: negative, non-numeric and boolean values count as 0."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        return 0
    return int(v)


def vector(usage: Any) -> list[int] | None:
    """A TokenUsage object as a vector; ``None`` when it has no usable total."""
    if not isinstance(usage, dict):
        return None
    # Counts are nearly always plain non-negative ints: take those as they are.
    get = usage.get
    a = get("input_tokens", 0)
    b = get("cached_input_tokens", 0)
    c = get("output_tokens", 0)
    d = get("cache_write_input_tokens", 0)
    e = get("total_tokens")
    if (type(a) is int and type(b) is int and type(c) is int and type(d) is int and type(e) is int
            and a >= 0 and b >= 0 and c >= 0 and d >= 0 and e >= 0):
        out = [a, b, c, d, e]
    else:
        out = [
            a if type(a) is int and a >= 0 else _count(a),
            b if type(b) is int and b >= 0 else _count(b),
            c if type(c) is int and c >= 0 else _count(c),
            d if type(d) is int and d >= 0 else _count(d),
            e if type(e) is int and e >= 0 else _count(e),
        ]
        if not isinstance(e, (int, float)):
            out[4] = out[0] + out[2]
    return out if out[0] or out[1] or out[2] or out[3] or out[4] else None


def advance(info: Any, state: dict[str, Any]) -> list[int] | None:
    """The usage one ``token_count.info`` adds, or ``None`` when it adds nothing.

    Reads and updates ``state["tot"]`` (the last cumulative vector) and
    ``state["last"]`` (the last per-request vector, to skip repeats when there
    are no totals).
    """
    if not isinstance(info, dict):
        return None
    total = vector(info.get("total_token_usage"))
    last = vector(info.get("last_token_usage"))
    prev_total: list[int] | None = state.get("tot")
    prev_last: list[int] | None = state.get("last")
    state["last"] = last
    if total is None:
        return last if last is not None and last != prev_last else None
    state["tot"] = total
    if prev_total is None:
        # A first count: prefer the call's own usage over a cumulative that may include inherited history.
        return last if last is not None else total
    if total[4] == prev_total[4]:
        return None
    if total[4] < prev_total[4]:
        return last
    return [max(0, a - b) for a, b in zip(total, prev_total, strict=True)]


def add(a: list[int] | None, b: list[int]) -> list[int]:
    """The sum of two usage vectors (``a`` may be ``None``)."""
    return list(b) if a is None else [x + y for x, y in zip(a, b, strict=True)]


def to_usage(vec: list[int]) -> Usage:
    """A neutral :class:`Usage`: ``input`` excludes the cached part, which is ``cache_read``.

    So ``input + cache_read + output == total`` for Codex's own counts.
    """
    inp, cached, out, cache_write, total = vec
    cached = min(cached, inp)
    return Usage(input=inp - cached, output=out, cache_read=cached, cache_write=cache_write, total=total)
