"""``when``: the listings' times written without strftime are strftime's text, to the character."""

from __future__ import annotations

import datetime as dt
import random

import pytest

from rematch_trace.report.text import when

EDGES = [0, 1, 999, 59_999, 86_399_999, 86_400_000, 951_782_400_000, 1_772_323_259_999, 253_402_300_799_999,
         253_402_300_800_000, -1, -86_400_001, 10**20]


def _strftime(t: int, fmt: str) -> str:
    try:
        return dt.datetime.fromtimestamp(t / 1000, dt.timezone.utc).strftime(fmt)
    except (OverflowError, OSError, ValueError):
        return "-"


@pytest.mark.parametrize("fmt", ["%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d", "%H:%M:%S"])
def test_when_writes_what_strftime_writes(fmt: str) -> None:
    rng = random.Random(32)
    times = EDGES + [rng.randrange(0, 253_402_300_800_000) for _ in range(20_000)]
    for t in times:
        assert when(t, fmt) == _strftime(t, fmt), t


def test_when_of_what_is_not_a_time() -> None:
    assert when(None) == when("1772323200000") == when(1.5) == when(True) == "-"
