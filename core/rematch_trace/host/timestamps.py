"""ISO-8601 timestamps to unix milliseconds: the one parser every plugin uses.

Transcript lines carry a timestamp each and crowd into the same seconds, so the
usual shape (``2025-09-25T01:22:20.083Z``) costs a dict hit on its second and
one ``int()``; a new second of a minute already seen costs a dict hit on the
minute and a second ``int()`` (a busy rollout starts a new second every few
lines); everything else takes the full parse.
"""

from __future__ import annotations

import datetime as _dt
import re

_ISO = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:[.,]([0-9]+))?"
    r"\s*(Z|z|[+-][0-9]{2}(?::?[0-9]{2})?)?",
    re.ASCII,
)
_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
# "YYYY-MM-DDTHH:MM:SS" -> unix milliseconds of that second read as UTC. Only a
# prefix that passed the full parse is ever cached; the cache is bounded.
_SECONDS: dict[str, int] = {}
_MAX_SECONDS = 4096
# "YYYY-MM-DDTHH:MM:" -> unix milliseconds of that minute, likewise only from a full parse.
_MINUTES: dict[str, int] = {}


def iso_ms(value: object) -> int | None:
    """Unix milliseconds of an ISO-8601 date and time, or ``None`` when ``value`` is not one.

    Accepts ``T``, ``t`` or a space between date and time, any fraction of a
    second (``.`` or ``,``; cut to milliseconds), and ``Z`` or a ``+hh:mm``,
    ``+hhmm`` or ``+hh`` offset; a time without a zone is read as UTC. The date
    must exist and the time be a real one (hour < 24, minute and second < 60).
    A date alone is not a timestamp.
    """
    if type(value) is str and len(value) == 24 and value[23] == "Z" and value[19] == ".":
        base = _SECONDS.get(value[:19])
        frac = value[20:23]
        if base is not None and frac.isascii() and frac.isdigit():
            return base + int(frac)
        minute_ms = _MINUTES.get(value[:17])
        sec = value[17:19]
        # (ASCII digits only: str.isdigit also takes other scripts' digits, which the full parse refuses)
        if minute_ms is not None and sec.isascii() and sec.isdigit() and sec < "60" and frac.isascii() and frac.isdigit():
            base = minute_ms + int(sec) * 1000
            if len(_SECONDS) >= _MAX_SECONDS:
                _SECONDS.clear()
            _SECONDS[value[:19]] = base
            return base + int(frac)
    if not isinstance(value, str):
        return None
    text = value.strip()
    m = _ISO.fullmatch(text)
    if m is None:
        return None
    # An absent fraction or zone reads as "" (not None): every group is a str, as its type says.
    year, month, day, hour, minute, second, frac, zone = m.groups("")
    h, mi, s = int(hour), int(minute), int(second)
    if h > 23 or mi > 59 or s > 59:
        return None
    try:
        days = _dt.date(int(year), int(month), int(day)).toordinal() - _EPOCH_ORDINAL
    except ValueError:
        return None
    base = (days * 86_400 + h * 3600 + mi * 60 + s) * 1000
    if text is value or text == value:
        if len(_SECONDS) >= _MAX_SECONDS:
            _SECONDS.clear()
        _SECONDS[value[:19]] = base
        if len(_MINUTES) >= _MAX_SECONDS:
            _MINUTES.clear()
        _MINUTES[value[:17]] = base - s * 1000
    ms = base + (int(frac[:3].ljust(3, "0")) if frac else 0)
    if zone and zone not in ("Z", "z"):
        digits = zone[1:].replace(":", "")
        offset = int(digits[:2]) * 3600 + (int(digits[2:4]) * 60 if len(digits) >= 4 else 0)
        ms -= (1 if zone[0] == "+" else -1) * offset * 1000
    return ms
