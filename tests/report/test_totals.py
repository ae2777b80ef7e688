"""``stats --by``'s rules (report/totals.py) on summaries made by hand: days in a time zone, 5-hour blocks.

The same rules run through the real command in tests/core/test_stats_by.py, and against ccusage in
tests/harness/test_ccusage_totals.py.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from decimal import Decimal
from typing import Any

from rematch_trace.report.prices import load
from rematch_trace.report.summary import SLOT_MS, SummaryFold
from rematch_trace.report.totals import compact, format_totals, totals

H = 3_600_000
MIN = 60_000


def at(text: str) -> int:
    """Milliseconds of a UTC time written ``2026-05-04T09:01:00.500``."""
    return int(dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc).timestamp() * 1000)


def summary(*turns: tuple[int, int], sid: str = "s", parent: str | None = None, model: str = "m") -> dict[str, Any]:
    """A stored summary's JSON of turns ``(time, tokens)``: the tokens as input, each token a millionth of a dollar,
    folded as the import folds them (so the slots are the real ones)."""
    fold = SummaryFold(load(None))
    fold.feed({"seq": 0, "t": turns[0][0], "ev": "session_start", "model": {"id": model}})
    for i, (t, n) in enumerate(turns, 1):
        fold.feed({"seq": i, "t": t, "ev": "turn_end", "model": {"id": model},
                   "usage": {"input": n, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": n,
                             "cost": n / 1e6}})
    from rematch_trace.report.summary import to_json

    js = to_json(fold.result(sid, {"harness": "claude_code", "session_id": sid, "parent": parent}))
    return js


def rows_of(by: str, *sums: dict[str, Any], **kw: Any) -> list[tuple[str, int]]:
    rows, _ = totals(list(sums), by, **kw)
    return [(r.name, r.tokens) for r in rows]


def test_a_slot_is_a_quarter_hour_with_its_first_and_last_turn() -> None:
    s = summary((at("2026-05-04T09:01:00.250"), 5), (at("2026-05-04T09:14:59.999"), 7), (at("2026-05-04T09:15:00"), 1))
    assert [(q["at"], q["first"], q["last"], q["tokens"]) for q in s["slots"]] == [
        (at("2026-05-04T09:00:00"), at("2026-05-04T09:01:00.250"), at("2026-05-04T09:14:59.999"), 12),
        (at("2026-05-04T09:15:00"), at("2026-05-04T09:15:00"), at("2026-05-04T09:15:00"), 1)]
    assert SLOT_MS == 15 * MIN


def test_days_weeks_and_months_follow_the_zone() -> None:
    # 23:30 UTC on Sunday 31 May is Monday 1 June in Tokyo and 16:30 on Sunday in Los Angeles.
    s = summary((at("2026-05-31T23:30:00"), 10), (at("2026-05-31T12:00:00"), 1))
    assert rows_of("day", s) == [("2026-05-31", 11)]
    tokyo = zoneinfo.ZoneInfo("Asia/Tokyo")
    assert rows_of("day", s, tz=tokyo) == [("2026-05-31", 1), ("2026-06-01", 10)]
    assert rows_of("week", s, tz=tokyo) == [("2026-05-25", 1), ("2026-06-01", 10)]
    assert rows_of("month", s, tz=tokyo) == [("2026-05", 1), ("2026-06", 10)]
    assert rows_of("day", s, tz=zoneinfo.ZoneInfo("America/Los_Angeles")) == [("2026-05-31", 11)]
    # --since/--until are days of the zone too.
    assert rows_of("day", s, tz=tokyo, since="2026-06-01") == [("2026-06-01", 10)]
    # Kathmandu is UTC+05:45: 18:14 UTC is 23:59 there, 18:15 is the next day (a slot's edge).
    k = summary((at("2026-03-01T18:14:59.999"), 1), (at("2026-03-01T18:15:00"), 2))
    assert rows_of("day", k, tz=zoneinfo.ZoneInfo("Asia/Kathmandu")) == [("2026-03-01", 1), ("2026-03-02", 2)]


def test_a_day_across_a_clock_change_is_one_day() -> None:
    # Paris went from UTC+1 to UTC+2 at 01:00 UTC on 29 March 2026: its day was 23 hours long.
    paris = zoneinfo.ZoneInfo("Europe/Paris")
    s = summary((at("2026-03-28T23:00:00"), 1), (at("2026-03-29T21:59:00"), 2), (at("2026-03-29T22:00:00"), 4))
    assert rows_of("day", s, tz=paris) == [("2026-03-29", 3), ("2026-03-30", 4)]


def test_blocks_start_on_the_hour_and_last_five_hours() -> None:
    s = summary((at("2026-05-04T09:42:10"), 1), (at("2026-05-04T13:59:59.999"), 2),  # within 09:00-14:00
                (at("2026-05-04T14:00:00.001"), 4),  # past 14:00: the next block, from 14:00, no gap
                (at("2026-05-04T23:30:00"), 8))  # 9.5 h after the last turn: a gap, then a block from 23:00
    rows, total = totals([s], "block", now=at("2026-06-01T00:00:00"))
    assert [(r.name, r.tokens, r.gap, r.active) for r in rows] == [
        ("2026-05-04 09:00", 3, False, False), ("2026-05-04 14:00", 4, False, False),
        ("gap 4h", 0, True, False), ("2026-05-04 23:00", 8, False, False)]
    gap = rows[2].as_json()
    # The gap runs from 5 hours after the last turn before it to the first turn after it.
    assert (gap["start"], gap["end"]) == ("2026-05-04T19:00:00.001+00:00", "2026-05-04T23:30:00.000+00:00")
    first = rows[0].as_json(zoneinfo.ZoneInfo("Asia/Tokyo"))
    assert (first["start"], first["end"], first["last"]) == (
        "2026-05-04T18:00:00.000+09:00", "2026-05-04T23:00:00.000+09:00", "2026-05-04T22:59:59.999+09:00")
    assert total.tokens == 15 and total.cost == Decimal("0.000015")


def test_a_gap_is_more_than_five_hours() -> None:
    # Exactly 5 hours after the last turn: a new block (past the first's end) but no gap row.
    s = summary((at("2026-05-04T09:00:00"), 1), (at("2026-05-04T14:00:00"), 2), (at("2026-05-04T19:00:00.001"), 4))
    assert rows_of("block", s) == [("2026-05-04 09:00", 1), ("2026-05-04 14:00", 2), ("gap 0h", 0),
                                   ("2026-05-04 19:00", 4)]


def test_a_turn_at_a_blocks_very_end_starts_the_next() -> None:
    """rematch's reading: the 5 hours exclude their end (ccusage keeps a turn at the very millisecond)."""
    s = summary((at("2026-05-04T09:10:00"), 1), (at("2026-05-04T14:00:00"), 2))
    assert rows_of("block", s) == [("2026-05-04 09:00", 1), ("2026-05-04 14:00", 2)]


def test_blocks_hold_every_session_and_the_active_one_is_marked() -> None:
    a = summary((at("2026-05-04T09:05:00"), 1), sid="a")
    b = summary((at("2026-05-04T10:20:00"), 2), sid="b", model="n")
    rows, _ = totals([a, b], "block", now=at("2026-05-04T12:00:00"))
    assert [(r.name, r.tokens, sorted(r.models), r.active) for r in rows] == [
        ("2026-05-04 09:00 now", 3, ["m", "n"], True)]
    # Over 5 hours after its last turn (10:20), or past its end: no longer active.
    for now in ("2026-05-04T15:20:00", "2026-05-04T14:00:00"):
        assert not totals([a, b], "block", now=at(now))[0][0].active
    # --since/--until choose blocks by their start's day; a gap shows only between two blocks shown.
    c = summary((at("2026-05-06T09:05:00"), 4), sid="c")
    assert rows_of("block", a, c) == [("2026-05-04 09:00", 1), ("gap 43h", 0), ("2026-05-06 09:00", 4)]
    assert rows_of("block", a, c, since="2026-05-05") == [("2026-05-06 09:00", 4)]


def test_sessions_are_main_sessions_in_the_order_of_their_first_turn() -> None:
    main = summary((at("2026-05-04T10:00:00"), 1), sid="main")
    child = summary((at("2026-05-04T09:00:00"), 2), sid="main.agent-1", parent="main")
    other = summary((at("2026-05-04T09:30:00"), 4), sid="other")
    assert rows_of("session", other, main, child) == [("main", 3), ("other", 4)]


def test_a_turn_without_a_time_is_counted_apart() -> None:
    s = summary((at("2026-05-04T10:00:00"), 1))
    s["usage"].append({"day": "unknown", "model": "m", "tokens": 9, "input": 9, "priced_tokens": 0})
    for by in ("day", "block", "session"):
        rows, total = totals([s], by, now=0)
        assert total.tokens == 10 and sum(r.tokens for r in rows) == 10, by
    assert rows_of("day", s)[-1] == ("unknown", 9)
    assert rows_of("day", s, since="2026-01-01") == [("2026-05-04", 1)]


def test_the_table_fits_its_width_with_short_counts() -> None:
    # A year of heavy use: 80 billion tokens a block is past any plan, and still fits.
    big = summary(*((at("2026-05-04T09:00:00") + i * 6 * H, 81_234_567_890) for i in range(3)))
    rows, total = totals([big], "block", now=0)
    whole = format_totals(rows, total, "block", None).splitlines()
    assert max(map(len, whole)) > 80 and "243,703,703,670" in whole[-1]
    fit = format_totals(rows, total, "block", 80).splitlines()
    assert max(map(len, fit)) <= 80 and "244B" in fit[-1] and fit[1].startswith("2026-05-04 09:00")
    assert [compact(n) for n in (999, 1000, 12_345, 123_456, 4_560_000, 1_230_000_000)] == [
        "999", "1.00K", "12.3K", "123K", "4.56M", "1.23B"]


def test_times_past_what_a_date_holds_are_counted_not_fatal() -> None:
    s = summary((at("9999-12-31T23:50:00"), 3), (at("1969-12-31T23:00:00"), 4))
    for by in ("day", "block"):
        rows, total = totals([s], by, tz=zoneinfo.ZoneInfo("Pacific/Kiritimati"), now=0)  # UTC+14: past year 9999
        assert total.tokens == 7 == sum(r.tokens for r in rows), by
        assert "unknown" in {r.name for r in rows}, by


def test_a_continued_fold_keeps_its_slots() -> None:
    """An import continued from a saved fold state (a transcript that grew) ends with the slots of a whole fold."""
    import orjson

    from rematch_trace.report.summary import to_json

    prices = load(None)
    recs = [{"seq": i, "t": at("2026-05-04T09:00:00") + i * 7 * MIN, "ev": "turn_end", "model": {"id": "m"},
             "usage": {"input": i, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": i + 1}} for i in range(9)]
    whole, part = SummaryFold(prices), SummaryFold(prices)
    for r in recs:
        whole.feed(r)
    for r in recs[:4]:
        part.feed(r)
    again = SummaryFold.resume(prices, orjson.loads(orjson.dumps(part.state())))
    assert again is not None
    for r in recs[4:]:
        again.feed(r)
    row = {"harness": "claude_code", "session_id": "s"}
    assert to_json(again.result("k", row))["slots"] == to_json(whole.result("k", row))["slots"]
    assert len(to_json(whole.result("k", row))["slots"]) == 4  # turns at 0, 7, ... 56 minutes
