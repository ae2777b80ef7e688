"""Text for people: values made safe to show, times, durations, token counts and costs.

(:func:`~rematch_trace.host.text.one_line`, a value as one line of terminal text, is in the host's
room: every room prints file names and messages.)

Used by the report's templates and by the terminal commands alike (no Jinja2 here).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING, Any

from rematch_trace.host.text import HIDDEN_CLASS, escape_char

if TYPE_CHECKING:
    from decimal import Decimal

#: A hidden character of a page (tabs and newlines are shown as such there).
_HIDDEN = re.compile(f"[{HIDDEN_CLASS}]")


def visible(value: Any) -> Any:
    """``value`` made safe to show: ``None`` as empty, hidden characters of a string escaped
    (:func:`escape_char`); tabs and newlines kept (a page shows them as such)."""
    if value is None:
        return ""
    if not isinstance(value, str) or hasattr(value, "__html__"):  # markup the templates made is safe
        return value
    if value.isascii() and value.isprintable():
        return value  # the usual case: nothing to escape (thousands of cells per listing)
    if "\r" in value:
        value = value.replace("\r\n", "\n")
    return _HIDDEN.sub(lambda m: escape_char(m.group()), value)


def when(t: Any, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
    """A millisecond timestamp as UTC text, or ``-``."""
    if type(t) is not int:
        return "-"
    seconds = _CLOCK.get(fmt)
    if seconds is not None and 0 <= t < _YEAR_10000_MS:
        # The listings' formats from the day's text (made once a day) and integer arithmetic: strftime
        # takes a lock and checks the time zone on every call (a tenth of ``rematch sessions``'s work
        # at 3,300 sessions). The same text, for every time from 1970 on (tests/report/test_text.py).
        day, ms = divmod(t, 86_400_000)
        date = _DAYS.get(day)
        if date is None:
            date = _DAYS[day] = dt.date.fromordinal(_EPOCH_ORDINAL + day).isoformat()
        s = ms // 1000
        if seconds:
            return f"{date} {s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"
        return f"{date} {s // 3600:02d}:{s // 60 % 60:02d}"
    try:
        return dt.datetime.fromtimestamp(t / 1000, dt.timezone.utc).strftime(fmt)
    except (OverflowError, OSError, ValueError):
        return "-"


#: The formats :func:`when` writes itself, and whether with seconds.
_CLOCK = {"%Y-%m-%d %H:%M:%S": True, "%Y-%m-%d %H:%M": False}
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_YEAR_10000_MS = (dt.date(9999, 12, 31).toordinal() + 1 - _EPOCH_ORDINAL) * 86_400_000
#: Day number since 1970 -> its ``YYYY-MM-DD`` (a listing's sessions fall on few days).
_DAYS: dict[int, str] = {}


def duration(ms: Any) -> str:
    """A duration in milliseconds as ``1h 02m``, ``3m 05s`` or ``12s``."""
    if type(ms) is not int or ms < 0:
        return "-"
    s = ms // 1000
    if s >= 3600:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s}s"


def tokens(n: Any) -> str:
    """A token count, short: 950, 12.3k, 4.56M."""
    if not isinstance(n, int):
        return "-"
    if n >= 1_000_000:
        return f"{n / 1_000_000:.2f}M"
    if n >= 10_000:
        return f"{n / 1000:.1f}k"
    return f"{n:,}"


def decimal_text(d: Decimal) -> str:
    """An exact decimal as plain digits, without an exponent or trailing zeros (``"12.5"``, ``"0"``)."""
    text = format(d, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text or "0"


def money(cost: Decimal, priced: int, total: int) -> str:
    """A cost in dollars; ``n/a`` when no turn has a cost, and ``*`` when only part of the tokens do."""
    if not priced:
        return "n/a" if total else "-"
    text = dollars(cost)
    return text if priced >= total else f"{text}*"


def dollars(cost: Decimal) -> str:
    """Dollars and cents; a cost above zero but below a cent is ``<$0.01``, never a zero it is not."""
    from decimal import Decimal  # here: ``rematch search`` formats times with this module, never money

    return "<$0.01" if 0 < cost < Decimal("0.005") else f"${cost:,.2f}"



def clip(text: Any, width: int) -> str:
    """``text`` on one line for a terminal: hidden characters shown, whitespace runs as one space, at most
    ``width`` characters (a cut is marked with ``…``)."""
    s = text if type(text) is str else str(visible(text))
    if not (s.isascii() and s.isprintable()) or "  " in s or s[:1] == " " or s[-1:] == " ":
        s = " ".join(str(visible(s)).split())  # the usual one-line printable text needs neither
    return s if len(s) <= width else s[: width - 1] + "…"
