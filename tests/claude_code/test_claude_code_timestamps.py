"""Claude Code's ISO-8601 timestamps as unix milliseconds."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from rematch_claude_code.timestamps import to_ms


def _ms(*args: int) -> int:
    return int(datetime(*args, tzinfo=timezone.utc).timestamp() * 1000)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-02-10T21:11:56.846Z", _ms(2026, 2, 10, 21, 11, 56) + 846),
        ("2026-02-10T21:11:56Z", _ms(2026, 2, 10, 21, 11, 56)),
        ("2026-02-10T21:11:56.8Z", _ms(2026, 2, 10, 21, 11, 56) + 800),
        ("2026-02-10T21:11:56.846123Z", _ms(2026, 2, 10, 21, 11, 56) + 846),
        ("2026-02-10T23:11:56.000+02:00", _ms(2026, 2, 10, 21, 11, 56)),
        ("2026-02-10T21:11:56", _ms(2026, 2, 10, 21, 11, 56)),
    ],
)
def test_timestamps_parse_to_utc_milliseconds(text: str, expected: int) -> None:
    assert to_ms(text) == expected


@pytest.mark.parametrize("value", [None, 5, "", "yesterday", "2026-13-10T21:11:56Z", "2026-02-10"])
def test_non_timestamps_are_none(value: object) -> None:
    assert to_ms(value) is None
