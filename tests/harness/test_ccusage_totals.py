"""``rematch stats --by`` against ccusage's own totals on the same Claude Code files (issue 43).

ccusage (pinned in versions.json, installed from npm by the rig) reads the shared corpus's Claude Code
folder through ``CLAUDE_CONFIG_DIR``, offline (its shipped prices, ``--offline``; run in a loopback-only
network namespace, so nothing reaches past this machine), costing every entry from its tokens
(``--mode calculate``, as rematch does for Claude Code), in UTC. rematch imports the same files and
prints ``stats --by ... --json --tz UTC``. Per day, week (from Monday), month and 5-hour block, the
tokens of every kind agree exactly and the costs to a millionth of a dollar (ccusage adds binary
floats, rematch exact decimals). Sessions differ in one way only, asserted here: ccusage counts a
sidechain kept in a file of its own at the project's top (``agent-<id>.jsonl``, Claude Code before
subagent folders) as a session by itself, where rematch counts it in the session that started it
(docs/report.md, "Compared with ccusage").
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from rig_install import path_of, pinned
from rig_session import BASE_ENV

#: The most a cost may differ by: ccusage's sums are binary floats (``2.3932151999999998``).
FLOAT_NOISE = Decimal("0.000001")


def corpus() -> Path:
    """The shared corpus (``corpus_dir``'s rule, for a module's fixture): skipped when absent unless
    REMATCH_REQUIRE_CORPUS=1."""
    found = Path(__file__).resolve().parents[3] / "shared" / "corpus"
    if not found.is_dir():
        if os.environ.get("REMATCH_REQUIRE_CORPUS") == "1":
            pytest.fail(f"REMATCH_REQUIRE_CORPUS=1 but {found} is missing")
        pytest.skip("shared corpus not present")
    return found


def _ccusage(exe: Path, claude_dir: Path, home: Path, command: str, *args: str) -> dict[str, Any]:
    env = {**BASE_ENV, "PATH": path_of(pinned("ccusage")), "HOME": str(home), "CLAUDE_CONFIG_DIR": str(claude_dir),
           "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"), "NO_COLOR": "1",
           "TZ": "UTC"}
    proc = subprocess.run(["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$0" "$@"', str(exe), "claude",
                           command, "--offline", "--mode", "calculate", "--timezone", "UTC", "--json", *args],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    value: dict[str, Any] = json.loads(proc.stdout)
    return value


def _rematch(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**BASE_ENV, "HOME": str(home), "TZ": "UTC"}
    return subprocess.run([sys.executable, "-m", "rematch_trace.cli", *args], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.fixture(scope="module")
def both(ccusage_exe: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """ccusage's JSON of every report and rematch's ``stats --by`` JSON of every grouping, on the same files."""
    claude_dir = corpus() / "claude_code"
    assert (claude_dir / "projects").is_dir()
    home = tmp_path_factory.mktemp("home")
    data = home / "data"
    imported = _rematch("import", str(claude_dir), "--data", str(data), home=home)
    assert imported.returncode in (0, 1), imported.stderr  # the corpus has bad lines on purpose
    out: dict[str, Any] = {"ccusage": {}, "rematch": {}}
    for command, by, extra in (("daily", "day", ()), ("weekly", "week", ("--start-of-week", "monday")),
                               ("monthly", "month", ()), ("session", "session", ()), ("blocks", "block", ())):
        out["ccusage"][by] = _ccusage(ccusage_exe, claude_dir, home, command, *extra)
        proc = _rematch("stats", "--data", str(data), "--harness", "claude_code", "--by", by, "--tz", "UTC", "--json",
                        home=home)
        assert proc.returncode == 0, proc.stderr
        out["rematch"][by] = json.loads(proc.stdout)
    sessions = _rematch("sessions", "--data", str(data), "--harness", "claude_code", "--json", home=home)
    out["sessions"] = json.loads(sessions.stdout)
    return out


def _same_usage(ours: dict[str, Any], theirs: dict[str, Any], cost_key: str = "totalCost") -> None:
    """One rematch row and one ccusage row: every kind of token equal, the cost to float noise."""
    tokens = theirs.get("tokenCounts", theirs)
    assert (ours["input"], ours["output"]) == (tokens["inputTokens"], tokens["outputTokens"])
    assert ours["cache_write"] == tokens.get("cacheCreationTokens", tokens.get("cacheCreationInputTokens"))
    assert ours["cache_read"] == tokens.get("cacheReadTokens", tokens.get("cacheReadInputTokens"))
    assert ours["tokens"] == theirs["totalTokens"]
    assert abs(Decimal(ours["cost"]) - Decimal(str(theirs[cost_key]))) < FLOAT_NOISE


@pytest.mark.parametrize(("by", "key", "name"), [("day", "daily", "date"), ("week", "weekly", "week"),
                                                  ("month", "monthly", "month")])
def test_periods_agree_with_ccusage(both: dict[str, Any], by: str, key: str, name: str) -> None:
    ours, theirs = both["rematch"][by], both["ccusage"][by]
    assert ours["tz"] == "UTC"
    assert [r["period"] for r in ours["rows"]] == [r[name] for r in theirs[key]]
    for mine, its in zip(ours["rows"], theirs[key], strict=True):
        _same_usage(mine, its)
    _same_usage(ours["total"], theirs["totals"])
    # The corpus's four days carry every kind of token, and a cost of more than $14.
    assert Decimal(ours["total"]["cost"]) > 14 and all(ours["total"][k] > 0 for k in ("input", "cache_read"))


def _utc(text: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def _apart(theirs: str, ours: str) -> int:
    """How many milliseconds later ccusage's time is than rematch's."""
    a, b = _utc(theirs), _utc(ours)
    assert a is not None and b is not None
    return (a - b) // dt.timedelta(milliseconds=1)


def test_blocks_agree_with_ccusage(both: dict[str, Any]) -> None:
    ours, theirs = both["rematch"]["block"]["rows"], both["ccusage"]["block"]["blocks"]
    assert len(ours) == len(theirs) and sum(r["gap"] for r in ours) == 3  # the corpus's gaps of days and 19 h
    apart = []
    for mine, its in zip(ours, theirs, strict=True):
        assert mine["gap"] is its["isGap"] and mine["active"] is its["isActive"]
        if mine["gap"]:
            # A gap runs from 5 hours after the last turn before it to the first turn after it.
            apart += [_apart(its["startTime"], mine["start"]), _apart(its["endTime"], mine["end"])]
        else:
            assert (_utc(mine["start"]), _utc(mine["end"])) == (_utc(its["startTime"]), _utc(its["endTime"]))
            apart.append(_apart(its["actualEndTime"], mine["last"]))
            _same_usage(mine, its, "costUSD")
    # A turn's time is its turn_end record's in rematch (when the trace closes the turn: its last line, or
    # the tool results that end it), one line of its message in ccusage: seconds apart, so a turn's block,
    # day or hour differs only for a message streamed across such an edge (none here). Measured here:
    assert sorted(apart) == [-3294, -3294, -3294, -2957, 0, 0, 0, 0, 278, 278], apart
    assert both["rematch"]["block"]["total"]["tokens"] == both["rematch"]["day"]["total"]["tokens"]


def test_sessions_agree_but_for_a_top_level_sidechain_file(both: dict[str, Any]) -> None:
    """ccusage's session of an ``agent-<id>.jsonl`` file is, in rematch, inside the session that started it
    (``<parent>.agent-<id>``); added to that parent, every session agrees."""
    ours = {r["period"]: r for r in both["rematch"]["session"]["rows"]}
    parent_of = {r["session_id"]: r["parent"] for r in both["sessions"]}
    merged: dict[str, dict[str, Any]] = {}
    moved = []
    for s in both["ccusage"]["session"]["sessions"]:
        sid = s["sessionId"]
        if sid not in ours:
            child = [c for c in parent_of if c.endswith(f".{sid}")]
            assert len(child) == 1 and sid.startswith("agent-"), sid
            sid = parent_of[child[0]]
            moved.append((s["sessionId"], s["totalTokens"]))
        into = merged.setdefault(sid, {"inputTokens": 0, "outputTokens": 0, "cacheCreationTokens": 0,
                                       "cacheReadTokens": 0, "totalTokens": 0, "totalCost": Decimal(0)})
        for k in ("inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens", "totalTokens"):
            into[k] += s[k]
        into["totalCost"] += Decimal(str(s["totalCost"]))
    assert moved == [("agent-90fa40b6", 613)]
    assert sorted(merged) == sorted(ours)
    for sid, its in merged.items():
        _same_usage(ours[sid], its)


def test_a_response_copied_into_another_session_counts_once_in_ccusage_only(
        ccusage_exe: Path, tmp_path: Path) -> None:
    """ccusage counts an API response (message id and request id) once across all files; rematch counts each
    session's own responses (a line another session's id names, as a resume copies, is skipped by that id).
    A session file copied under a new session id, as the 1 GiB bench corpus is made, so counts once in
    ccusage and twice in rematch: the whole difference there (docs/report.md)."""
    original = corpus() / "claude_code" / "projects" / "-Users-USER-spotter" / "55604662-cf2a-4331-851a-ec234028f8ca.jsonl"
    claude_dir = tmp_path / "claude"
    copy_id = "55604662-cf2a-4331-851a-ec234028f8cb"
    for project, sid in (("-a", original.stem), ("-b", copy_id)):
        (claude_dir / "projects" / project).mkdir(parents=True)
        (claude_dir / "projects" / project / f"{sid}.jsonl").write_text(original.read_text().replace(original.stem, sid))
    theirs = _ccusage(ccusage_exe, claude_dir, tmp_path, "daily")["totals"]
    assert _rematch("import", str(claude_dir), "--data", str(tmp_path / "d"), home=tmp_path).returncode == 0
    proc = _rematch("stats", "--data", str(tmp_path / "d"), "--by", "day", "--tz", "UTC", "--json", home=tmp_path)
    ours = json.loads(proc.stdout)["total"]
    assert (theirs["totalTokens"], ours["tokens"]) == (25_366, 2 * 25_366)
    assert Decimal(ours["cost"]) == 2 * Decimal("0.1444475") and abs(theirs["totalCost"] - 0.1444475) < 1e-9


#: The example Claude Code session: three responses of claude-opus-4-6 (input, output, cache write, cache read).
EXAMPLE = (Path(__file__).resolve().parents[2] / "examples" / "transcripts" / "claude_code" / "projects"
           / "-home-dev-webapp" / "5b1f0c3e-8a7d-4e52-9b61-2f0d7c4a9e11.jsonl")


def test_a_long_prompt_is_billed_whole_in_rematch_and_split_or_not_at_all_in_ccusage(
        ccusage_exe: Path, tmp_path: Path) -> None:
    """The example session with its second response's cache reads made 250,000: a prompt of 251,500 tokens,
    past the 200K that Anthropic bills at its long-context rates. rematch bills that turn whole at them
    (every kind: input, output, cache reads); ccusage splits each kind by itself at 200K (only the cache
    reads past 200,000 at the higher rate) for Sonnet 4.5, and has no long-context rate for Opus 4.6 (all at
    the base rate). The other two responses cost the same in both. Prices per million tokens, from
    rematch's table (ccusage's agree on the base rates)."""
    long_turn = (1_500, 60, 250_000)  # input, output, cache reads of the long response
    others = {"claude-sonnet-4-5-20250929": (3, 15, 3.75, 0.30), "claude-opus-4-6": (5, 25, 6.25, 0.50)}
    more: dict[str, Decimal] = {}
    for model, (inp, out, write, read) in others.items():
        text = EXAMPLE.read_text().replace("claude-opus-4-6", model).replace(
            '"input_tokens":1500,"output_tokens":60,"cache_read_input_tokens":3000',
            '"input_tokens":1500,"output_tokens":60,"cache_read_input_tokens":250000')
        claude_dir = tmp_path / model / "claude"
        (claude_dir / "projects" / "-x").mkdir(parents=True)
        (claude_dir / "projects" / "-x" / EXAMPLE.name).write_text(text)
        theirs = _ccusage(ccusage_exe, claude_dir, tmp_path / model, "daily")["totals"]
        data = tmp_path / model / "d"
        assert _rematch("import", str(claude_dir), "--data", str(data), home=tmp_path / model).returncode == 0
        ours = json.loads(_rematch("stats", "--data", str(data), "--by", "day", "--tz", "UTC", "--json",
                                   home=tmp_path / model).stdout)["total"]
        assert (ours["tokens"], theirs["totalTokens"]) == (260_586, 260_586)
        # The two short responses: 1,200 in, 96 out, 3,000 written; 1,700 in, 30 out, 3,000 read.
        short = Decimal(1_200 * inp + 96 * out) + Decimal(str(write)) * 3_000 + Decimal(1_700 * inp + 30 * out) \
            + Decimal(str(read)) * 3_000
        i, o, r = long_turn
        whole = Decimal(i * inp * 2) + Decimal(o) * Decimal(out) * Decimal("1.5") + Decimal(str(read)) * 2 * r
        assert Decimal(ours["cost"]) == (short + whole) / 1_000_000
        if model.startswith("claude-sonnet"):
            split = Decimal(i * inp + o * out) + Decimal(str(read)) * (200_000 + 2 * (r - 200_000))
        else:
            split = Decimal(i * inp + o * out) + Decimal(str(read)) * r
        assert abs(Decimal(str(theirs["totalCost"])) - (short + split) / 1_000_000) < FLOAT_NOISE
        more[model] = (whole - split) / 1_000_000
    # What that one turn costs more in rematch than in ccusage.
    assert more == {"claude-sonnet-4-5-20250929": Decimal("0.06495"), "claude-opus-4-6": Decimal("0.13325")}
