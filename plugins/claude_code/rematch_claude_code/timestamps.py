"""ISO-8601 timestamps as Claude Code writes them, to unix milliseconds."""

from __future__ import annotations

import calendar
import re

_ISO = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?\s*(Z|z|[+-]\d\d(?::?\d\d)?)?$"
)


# Lines crowd into the same seconds: the unix seconds of "YYYY-MM-DDTHH:MM:SS"
# prefixes that parsed in the usual "...SS.mmmZ" shape.
_SECONDS: dict[str, int] = {}
_MAX_SECONDS = 4096


def to_ms(value: object) -> int | None:
    """Unix milliseconds of an ISO-8601 string, or ``None`` when it is not one.

    A timestamp without a zone is read as UTC (Claude Code always writes ``Z``).
    """
    if type(value) is not str:
        return _parse(value)
    usual = len(value) == 24 and value[23] == "Z" and value[19] == "."
    frac = value[20:23]
    if usual and frac.isascii() and frac.isdigit():
        secs = _SECONDS.get(value[:19])
        if secs is not None:
            return secs * 1000 + int(frac)
        ms = _parse(value)
        if ms is not None:
            if len(_SECONDS) >= _MAX_SECONDS:
                _SECONDS.clear()
            _SECONDS[value[:19]] = (ms - int(frac)) // 1000
        return ms
    return _parse(value)


def _parse(value: object) -> int | None:
    if not isinstance(value, str):
        return None
    m = _ISO.match(value.strip())
    if m is None:
        return None
    year, month, day, hour, minute, second, frac, zone = m.groups()
    try:
        secs = calendar.timegm(
            (int(year), int(month), int(day), int(hour), int(minute), int(second), 0, 0, 0)
        )
    except (ValueError, OverflowError):
        return None
    if not (1 <= int(month) <= 12 and 1 <= int(day) <= 31 and int(hour) < 24 and int(minute) < 60):
        return None
    ms = int((frac or "0")[:3].ljust(3, "0"))
    if zone and zone not in ("Z", "z"):
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset = int(digits[:2]) * 3600 + (int(digits[2:4]) * 60 if len(digits) >= 4 else 0)
        secs -= sign * offset
    return secs * 1000 + ms
