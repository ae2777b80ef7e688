"""The one ISO-8601 parser the plugins share: unix milliseconds, or None."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from rematch_trace.host.timestamps import iso_ms


def _ms(*args: int) -> int:
    return int(datetime(*args, tzinfo=timezone.utc).timestamp() * 1000)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-02-10T21:11:56.846Z", _ms(2026, 2, 10, 21, 11, 56) + 846),  # Claude Code, Codex, omp
        ("2026-02-10T21:11:56Z", _ms(2026, 2, 10, 21, 11, 56)),
        ("2026-02-10T21:11:56.8Z", _ms(2026, 2, 10, 21, 11, 56) + 800),
        ("2026-02-10T21:11:56.846123Z", _ms(2026, 2, 10, 21, 11, 56) + 846),
        ("2026-02-10T23:11:56.000+02:00", _ms(2026, 2, 10, 21, 11, 56)),
        ("2026-02-10T23:11:56.000+0200", _ms(2026, 2, 10, 21, 11, 56)),
        ("2026-02-10T23:11:56+02", _ms(2026, 2, 10, 21, 11, 56)),
        ("2025-09-24T20:22:20-05:00", _ms(2025, 9, 25, 1, 22, 20)),
        ("2026-02-10T21:11:56", _ms(2026, 2, 10, 21, 11, 56)),  # no zone: UTC
        ("2026-02-10 21:11:56,5z", _ms(2026, 2, 10, 21, 11, 56) + 500),
        ("2024-02-29T23:59:59.999Z", _ms(2024, 2, 29, 23, 59, 59) + 999),
    ],
)
def test_timestamps_parse_to_utc_milliseconds(text: str, expected: int) -> None:
    assert iso_ms(text) == expected
    assert iso_ms(text) == expected  # the cached second agrees with the full parse


@pytest.mark.parametrize(
    "value",
    [None, 5, "", "yesterday", "2026-13-10T21:11:56Z", "2026-02-10", "2025-02-29T00:00:00Z", "2026-02-10T24:00:00Z",
     "2026-02-10T21:60:00Z", "2025-09-25T01:22:20.083Q", "2025-09-25X01:22:20Z", "٢٠٢٥-09-25T01:22:20Z"],
)
def test_non_timestamps_are_none(value: object) -> None:
    assert iso_ms(value) is None


def test_cache_never_answers_for_a_bad_fraction() -> None:
    assert iso_ms("2026-03-01T10:00:00.123Z") is not None  # caches the second
    assert iso_ms("2026-03-01T10:00:00.1x3Z") is None


def test_a_new_second_of_a_cached_minute_agrees_with_the_full_parse() -> None:
    assert iso_ms("2026-03-02T10:07:00.123Z") is not None  # caches the minute
    for sec in range(60):
        text = f"2026-03-02T10:07:{sec:02d}.456Z"
        assert iso_ms(text) == _ms(2026, 3, 2, 10, 7, sec) + 456
    assert iso_ms("2026-03-02T10:08:01.000Z") == _ms(2026, 3, 2, 10, 8, 1)  # another minute: the full parse


@pytest.mark.parametrize("text", ["2026-03-02T10:07:60.000Z", "2026-03-02T10:07:6x.000Z", "2026-03-02T10:07:٠١.000Z",
                                  "2026-03-02T10:07:01.0x0Z", "2026-03-02T10:07:-1.000Z"])
def test_the_minute_cache_never_answers_for_a_bad_second(text: str) -> None:
    assert iso_ms("2026-03-02T10:07:00.123Z") is not None  # caches the minute
    assert iso_ms(text) is None
