"""Issue 43, through the real ``rematch stats --by``: a time zone (``--tz``, default the machine's) and the
5-hour blocks (``--by block``), on sessions whose times the test chooses.

The example Claude Code session is moved in time (its turns are at HH:01-HH:09 of one hour) and
imported; the rules themselves are tested in tests/report/test_totals.py, against ccusage in
tests/harness/test_ccusage_totals.py.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from test_cli_surprises import CC, CC_ID, rematch


def moved(folder: Path, hour: dt.datetime, sid: str = CC_ID, scale: int = 1) -> Path:
    """The example session with its turns in ``hour`` (UTC), its id ``sid``, its cache reads times ``scale``."""
    text = CC.read_text().replace("2026-05-04T09:", hour.strftime("%Y-%m-%dT%H:")).replace(CC_ID, sid)
    text = text.replace('"cache_read_input_tokens":3000', f'"cache_read_input_tokens":{3000 * scale}')
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    path.write_text(text)
    return path


def imported(tmp_path: Path, *hours: dt.datetime, scale: int = 1) -> Path:
    """A data folder of the example session once per hour in ``hours``, each its own session."""
    src, data = tmp_path / "src", tmp_path / "data"
    for n, hour in enumerate(hours):
        moved(src, hour, f"{CC_ID[:-2]}{n:02d}", scale)
    proc = rematch("import", str(src), "--data", str(data))
    assert proc.returncode == 0, proc.stderr
    return data


def by(data: Path, how: str, *args: str, tz: str | None = None) -> dict[str, Any]:
    env = {"TZ": tz} if tz is not None else None
    proc = rematch("stats", "--data", str(data), "--by", how, "--json", *args, env=env)
    assert proc.returncode == 0, proc.stderr
    value: dict[str, Any] = json.loads(proc.stdout)
    return value


def test_days_are_the_machines_zone_unless_told(tmp_path: Path) -> None:
    # 23:01-23:09 UTC on 4 May: 5 May in Tokyo, 4 May in UTC and in New York.
    data = imported(tmp_path, dt.datetime(2026, 5, 4, 23))
    tokyo = by(data, "day", tz="Asia/Tokyo")
    assert tokyo["tz"] == "Asia/Tokyo" and [r["period"] for r in tokyo["rows"]] == ["2026-05-05"]
    utc = by(data, "day", "--tz", "UTC", tz="Asia/Tokyo")
    assert utc["tz"] == "UTC" and [r["period"] for r in utc["rows"]] == ["2026-05-04"]
    assert [r["period"] for r in by(data, "day", "--tz", "America/New_York")["rows"]] == ["2026-05-04"]
    # An empty TZ is UTC, as the C library has it; --since/--until are days of the zone.
    assert by(data, "month", tz="")["tz"] == "UTC"
    assert by(data, "day", "--since", "2026-05-05", tz="Asia/Tokyo")["total"]["tokens"] == utc["total"]["tokens"] > 0
    later = rematch("stats", "--data", str(data), "--by", "day", "--since", "2026-05-05", "--tz", "UTC")
    assert later.returncode == 1 and later.stdout.strip() == "no usage matches"
    text = rematch("stats", "--data", str(data), "--by", "day", env={"TZ": "Asia/Tokyo"}).stdout.splitlines()
    assert text[1].startswith("2026-05-05") and text[-1] == "times in Asia/Tokyo"


def test_a_zone_that_is_none_is_refused_in_one_line(tmp_path: Path) -> None:
    data = imported(tmp_path, dt.datetime(2026, 5, 4, 9))
    for args, said in ((["--by", "day", "--tz", "Mars/Olympus_Mons"],
                        "Error: --tz: 'Mars/Olympus_Mons' is no time zone (an IANA name such as UTC or Europe/Paris)"),
                       (["--by", "week", "--tz", "../../etc/passwd"],
                        "Error: --tz: '../../etc/passwd' is no time zone (an IANA name such as UTC or Europe/Paris)"),
                       (["--tz", "UTC"], "Error: --tz needs --by (stats' own per-day figures are kept by UTC day)")):
        proc = rematch("stats", "--data", str(data), *args)
        assert (proc.returncode, proc.stderr.splitlines(), proc.stdout) == (2, [said], "")


def test_blocks_mark_the_active_one_and_the_gaps(tmp_path: Path) -> None:
    now = dt.datetime.now(dt.timezone.utc).replace(minute=0, second=0, microsecond=0, tzinfo=None)
    # Two sessions 10 hours apart in the past, a third in the last hour (its turns at most 69 minutes ago).
    data = imported(tmp_path, now - dt.timedelta(hours=21), now - dt.timedelta(hours=11), now - dt.timedelta(hours=1))
    got = by(data, "block", "--tz", "UTC")
    rows = got["rows"]
    assert [(r["gap"], r["active"]) for r in rows] == [(False, False), (True, False), (False, False), (True, False),
                                                       (False, True)]
    first, gap = rows[0], rows[1]
    start = (now - dt.timedelta(hours=21)).replace(tzinfo=dt.timezone.utc)
    assert first["start"] == start.isoformat(timespec="milliseconds") and first["period"] == start.strftime("%Y-%m-%d %H:00")
    assert first["end"] == (start + dt.timedelta(hours=5)).isoformat(timespec="milliseconds")
    # The gap: from 5 hours after the first session's last turn (HH:09) to the next one's first turn (HH:04).
    assert gap["start"] == (start + dt.timedelta(hours=5, minutes=9)).isoformat(timespec="milliseconds")
    assert gap["end"] == (start + dt.timedelta(hours=10, minutes=4)).isoformat(timespec="milliseconds")
    assert gap["period"] == "gap 4h" and gap["tokens"] == 0
    blocks = [r for r in rows if not r["gap"]]
    assert sum(r["tokens"] for r in blocks) == got["total"]["tokens"] == 3 * blocks[0]["tokens"] > 0
    assert Decimal(got["total"]["cost"]) == 3 * Decimal(blocks[0]["cost"]) > 0
    text = rematch("stats", "--data", str(data), "--by", "block", "--tz", "UTC").stdout.splitlines()
    assert text[0].split()[:3] == ["block", "input", "output"] and text[-2].startswith("total")
    assert text[-4].startswith(f"{(now - dt.timedelta(hours=1)):%Y-%m-%d %H:00} now ") and text[2].startswith("gap 4h")
    assert max(map(len, text)) <= 80
