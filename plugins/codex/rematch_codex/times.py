"""Rollout timestamps (``2025-09-25T01:22:20.083Z``) to unix milliseconds."""

from __future__ import annotations

import datetime as _dt

_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
# Every line of a rollout carries a timestamp and most share a day: caching the
# day's epoch makes the common case a few slices and int() calls.
_DAYS: dict[str, int] = {}
_MAX_DAYS = 4096


def _day_ms(day: str) -> int:
    ms = _DAYS.get(day)
    if ms is None:
        y, m, d = int(day[0:4]), int(day[5:7]), int(day[8:10])
        ms = (_dt.date(y, m, d).toordinal() - _EPOCH_ORDINAL) * 86_400_000
        if len(_DAYS) >= _MAX_DAYS:
            _DAYS.clear()
        _DAYS[day] = ms
    return ms


def to_ms(value: object) -> int | None:
    """Unix milliseconds of an ISO-8601 timestamp, or ``None`` when it is not one.

    Codex writes UTC with a ``Z`` and millisecond precision; other fractions and
    ``+hh:mm`` offsets are accepted too.
    """
    if not isinstance(value, str) or len(value) < 19 or value[10] not in "Tt ":
        return None
    try:
        ms = _day_ms(value[:10])
        ms += (int(value[11:13]) * 3600 + int(value[14:16]) * 60 + int(value[17:19])) * 1000
        rest = value[19:]
        if rest.startswith("."):
            i = 1
            while i < len(rest) and rest[i].isdigit():
                i += 1
            ms += int((rest[1:i] + "000")[:3])
            rest = rest[i:]
        if rest and rest[0] in "+-":
            sign = 1 if rest[0] == "+" else -1
            ms -= sign * (int(rest[1:3]) * 60 + int(rest[-2:])) * 60_000
        elif rest not in ("", "Z", "z"):
            return None
    except ValueError:
        return None
    return ms
