"""Byte limits of the trace: UTF-8 cuts that never split a character."""

from __future__ import annotations

from typing import Any

import orjson

from rematch_trace.host.exactnum import ExactNumber, json_default

#: ``input.text`` limit.
TEXT_LIMIT = 16 * 1024
#: ``after_deliverable`` and ``turn_end.text_head`` limit.
HEAD_LIMIT = 2 * 1024
#: ``tool_result.input`` compact-JSON limit.
INPUT_LIMIT = 8 * 1024


def cut_utf8(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, never inside a character."""
    if len(text) <= limit // 4:
        return text  # even at 4 bytes a character it fits
    if text.isascii():  # a byte a character: no encoding needed to find the cut
        return text if len(text) <= limit else text[:limit]
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    # Back off from the cut to the start of a character (never a continuation byte).
    end = limit
    while end > 0 and (data[end] & 0xC0) == 0x80:
        end -= 1
    return data[:end].decode("utf-8", "surrogatepass")


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value, default=json_default)
    except (orjson.JSONEncodeError, TypeError):
        return orjson.dumps(_printable(value))


def _printable(value: Any) -> Any:
    """A JSON-safe copy: lone surrogates escaped, exotic numbers as strings."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_printable(str(k)): _printable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_printable(v) for v in value]
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**64 else str(value)
    if isinstance(value, float | ExactNumber):
        return value  # an exact number is written exactly (json_default)
    return str(value)


def _cap_strings(value: Any, cap: int) -> Any:
    if isinstance(value, str):
        if len(value) > cap:
            return f"{value[:cap]}…[+{len(value) - cap}]"
        return value
    if isinstance(value, dict):
        return {k: _cap_strings(v, cap) for k, v in value.items()}
    if isinstance(value, list):
        return [_cap_strings(v, cap) for v in value]
    return value


def _cap_lists(value: Any, keep: int) -> Any:
    if isinstance(value, dict):
        return {k: _cap_lists(v, keep) for k, v in value.items()}
    if isinstance(value, list):
        head = [_cap_lists(v, keep) for v in value[:keep]]
        if len(value) > keep:
            head.append(f"…[+{len(value) - keep}]")
        return head
    return value


def _longest_string(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return max((_longest_string(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return max((_longest_string(v) for v in value), default=0)
    return 0


def truncate_input(value: Any, limit: int = INPUT_LIMIT) -> Any:
    """A tool input whose compact JSON fits ``limit`` bytes, every key kept.

    Long strings are cut to end in ``…[+N]``, N being the exact number of
    characters removed; the longest common cap that fits is found by bisection.
    Only if cutting every string to nothing still does not fit are long arrays
    shortened the same way (``"…[+N]"`` standing for N dropped elements).
    """
    try:
        if len(orjson.dumps(value, default=json_default)) <= limit:
            return value  # the common case: small and plain, kept as it is
    except (orjson.JSONEncodeError, TypeError):
        pass
    value = _printable(value)
    if len(_dumps(value)) <= limit:
        return value
    lo, hi = 0, _longest_string(value)
    best = None
    while lo <= hi:
        mid = (lo + hi) // 2
        candidate = _cap_strings(value, mid)
        if len(_dumps(candidate)) <= limit:
            best, lo = candidate, mid + 1
        else:
            hi = mid - 1
    if best is not None:
        return best
    bare = _cap_strings(value, 0)
    for keep in (64, 16, 4, 1, 0):
        candidate = _cap_lists(bare, keep)
        if len(_dumps(candidate)) <= limit:
            return candidate
    # Thousands of keys: the keys alone overflow. Keep what fits, say what did not.
    return {"…": f"[+{len(_dumps(value))} bytes of input omitted]"}
