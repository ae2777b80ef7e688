"""Rollout timestamps (``2025-09-25T01:22:20.083Z``) to unix milliseconds."""

from __future__ import annotations

import datetime as _dt

_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
# Every line of a rollout carries a timestamp and runs of lines share a second:
# caching days and seconds makes the common case a dict hit and one int().
_DAYS: dict[str, int] = {}
_MAX_DAYS = 4096
_SECONDS: dict[str, int] = {}
_MAX_SECONDS = 4096


def _second_ms(prefix: str) -> int:
    """Milliseconds of ``YYYY-MM-DDTHH:MM:SS`` (raises ValueError when malformed)."""
    ms = _SECONDS.get(prefix)
    if ms is None:
        if prefix[13] != ":" or prefix[16] != ":":
            raise ValueError(prefix)
        ms = _day_ms(prefix[:10]) + (int(prefix[11:13]) * 3600 + int(prefix[14:16]) * 60 + int(prefix[17:19])) * 1000
        if len(_SECONDS) >= _MAX_SECONDS:
            _SECONDS.clear()
        _SECONDS[prefix] = ms
    return ms


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
    # The common shape, "...:SS.mmmZ", costs a cache hit on the second (only a
    # prefix that passed every check below is ever cached).
    if type(value) is str and len(value) == 24 and value[23] == "Z" and value[19] == ".":
        base = _SECONDS.get(value[:19])
        if base is not None and value[20:23].isdigit():
            return base + int(value[20:23])
    if not isinstance(value, str) or len(value) < 19 or value[10] not in "Tt ":
        return None
    try:
        ms = _second_ms(value[:19])
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
