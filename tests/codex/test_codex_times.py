"""Rollout timestamps to unix milliseconds."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from rematch_codex.times import to_ms


@pytest.mark.parametrize(
    "text",
    ["2025-09-25T01:22:20.083Z", "2025-09-25T01:22:20Z", "2024-02-29T23:59:59.999Z", "2025-09-25T01:22:20.5Z"],
)
def test_utc_timestamps(text: str) -> None:
    expected = int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
    assert to_ms(text) == expected
    assert to_ms(text) == expected  # the cached path agrees with the first


def test_offsets() -> None:
    assert to_ms("2025-09-25T03:22:20.083+02:00") == to_ms("2025-09-25T01:22:20.083Z")
    assert to_ms("2025-09-24T20:22:20-05:00") == int(datetime(2025, 9, 25, 1, 22, 20, tzinfo=timezone.utc).timestamp() * 1000)


@pytest.mark.parametrize("bad", [None, 5, "", "yesterday", "2025-13-01T00:00:00Z", "2025-09-25T01:22:20.083Q", "2025-09-25X01:22:20Z"])
def test_not_timestamps(bad: object) -> None:
    assert to_ms(bad) is None
