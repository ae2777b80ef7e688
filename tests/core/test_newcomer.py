"""Issue 43, through the real ``rematch`` process: what tripped a newcomer up, fixed one by one.

Each test drives the command a user types and reads what the user reads (stdout, stderr, the exit
status, the files it leaves).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from test_cli_surprises import CC_ID, ROOT, rematch, transcript

# -- a configuration file with mistakes --------------------------------------------------------------------


def configured(tmp_path: Path, text: str) -> Path:
    """A home folder whose configuration file (``$REMATCH_CONFIG``) holds ``text``."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yml").write_text(text)
    return home


def import_with(tmp_path: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """``rematch import`` of one example session under ``home``'s configuration."""
    return rematch("import", str(transcript(tmp_path / "src")), "--data", str(tmp_path / "d"), home=home)


def test_config_mistakes_are_printed_one_a_line(tmp_path: Path) -> None:
    home = configured(tmp_path, "domains:\n  - path: /x\n    domian: a\n  - pth: /y\n")
    src = transcript(tmp_path / "src")
    for args in (["import", str(src), "--data", str(tmp_path / "d")], ["lake", "migrate", "--data", str(tmp_path / "d")]):
        proc = rematch(*args, home=home)
        assert proc.returncode == 2, proc.stderr
        assert "\\u000a" not in proc.stderr, proc.stderr
        lines = proc.stderr.splitlines()
        assert lines[0].endswith("the configuration file has mistakes (nothing was changed):")
        cfg = str(home / "config.yml")
        assert f"  {cfg}:3: domains[0].domian: unknown key (known: path, remote, domain)" in lines
        assert f"  {cfg}:4: domains[1]: needs path or remote" in lines


def test_a_hostile_newline_in_a_config_mistake_still_cannot_forge_a_line(tmp_path: Path) -> None:
    proc = import_with(tmp_path, configured(tmp_path, 'domains:\n  - path: /x\n    "evil\\nForged: line": a\n'))
    assert proc.returncode == 2
    assert not any(line.startswith("Forged") for line in proc.stderr.splitlines()), proc.stderr
    assert "evil\\u000aForged" in proc.stderr


def test_a_yaml_syntax_error_names_its_line_and_column(tmp_path: Path) -> None:
    home = configured(tmp_path, "domains:\n  - path: /x\n    domain: [a, b\n  - path: /y\n")
    proc = import_with(tmp_path, home)
    assert proc.returncode == 2
    mistake = proc.stderr.splitlines()[1].strip()
    assert mistake.startswith(f"{home / 'config.yml'}:4:9: not YAML: "), proc.stderr
    assert "(while parsing a flow sequence at line 3, column 13)" in mistake
    # doctor says the same, with its line and column
    doctor = rematch("doctor", "--data", str(tmp_path / "d"), home=home)
    assert f"{home / 'config.yml'}:4:9: not YAML" in doctor.stdout + doctor.stderr


# -- a prices file with mistakes: exit status 2, as the exit table says -------------------------------------


def test_a_prices_file_with_mistakes_exits_2(tmp_path: Path) -> None:
    data = tmp_path / "d"
    assert rematch("import", str(transcript(tmp_path / "src")), "--data", str(data)).returncode == 0
    bad = tmp_path / "prices.yml"
    bad.write_text("models:\n  claude-x:\n    inptu: 3\n")
    syntax = tmp_path / "syntax.yml"
    syntax.write_text("models:\n  claude-x: {input: 3\n")
    for cmd in ("stats", "sessions", "report"):
        proc = rematch(cmd, "--data", str(data), "--prices", str(bad))
        assert proc.returncode == 2, (cmd, proc.stderr)
        assert "prices not loaded" in proc.stderr and "inptu" in proc.stderr
        proc = rematch(cmd, "--data", str(data), "--prices", str(syntax))
        assert proc.returncode == 2 and f"{syntax}:3:1: not YAML" in proc.stderr, proc.stderr


# -- one rule for exits: nothing found is 1; a misspelt harness is refused -----------------------------------


READERS = (("sessions",), ("flagged",), ("stats",), ("audit",), ("search", "build"))


def test_nothing_found_exits_1_for_every_reading_command(tmp_path: Path) -> None:
    data = tmp_path / "d"
    assert rematch("import", str(transcript(tmp_path / "src")), "--data", str(data)).returncode == 0
    for cmd in READERS:
        found = rematch(*cmd, "--data", str(data))
        assert found.returncode == 0, (cmd, found.stdout, found.stderr)
        for form in ((), ("--json",)):
            none = rematch(*cmd, "--data", str(data), "--since", "2099-01-01", *form)
            assert none.returncode == 1, (cmd, form, none.stdout, none.stderr)
            if form:
                json.loads(none.stdout)  # the empty answer is still printed as JSON
            else:
                assert "match" in none.stdout or "no " in none.stdout, (cmd, none.stdout)


def test_a_misspelt_harness_is_refused_with_the_known_ones(tmp_path: Path) -> None:
    data = tmp_path / "d"
    assert rematch("import", str(transcript(tmp_path / "src")), "--data", str(data)).returncode == 0
    for cmd in READERS:
        proc = rematch(*cmd, "--data", str(data), "--harness", "cladue_code")
        assert proc.returncode == 2, (cmd, proc.stdout, proc.stderr)
        assert "'cladue_code' is no installed plugin's harness" in proc.stderr
        assert "claude_code" in proc.stderr.split("known:")[1] and "codex" in proc.stderr.split("known:")[1]
        assert rematch(*cmd, "--data", str(data), "--harness", "claude_code").returncode == 0, cmd


# -- search: a phrase through the shell; options after -- -------------------------------------------------


def test_search_phrase_and_options_after_the_double_dash(tmp_path: Path) -> None:
    data = tmp_path / "d"
    assert rematch("import", str(transcript(tmp_path / "src")), "--data", str(data)).returncode == 0
    # The shell passes "clear the build" as one argument without its quotes: words, in any order.
    assert rematch("search", "build the clear", "--data", str(data)).returncode == 0
    assert rematch("search", "--phrase", "build the clear", "--data", str(data)).returncode == 1
    hit = rematch("search", "--phrase", "clear the build", "--data", str(data))
    assert hit.returncode == 0 and "«clear the build»" in hit.stdout
    assert rematch("search", '"clear the build"', "--data", str(data)).stdout == hit.stdout
    late = rematch("search", "--data", str(data), "--", "clear", "--limit", "3")
    assert "--limit came after -- and is searched as a word" in late.stderr


# -- the data folder, an empty folder, a transcript that is gone, a shell escape ------------------------------

OMP = next((ROOT / "examples" / "transcripts" / "omp").rglob("*.jsonl"))


def test_data_naming_a_regular_file_is_one_clear_line(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    for cmd in (("import", str(transcript(tmp_path / "src"))), ("sessions",), ("report",), ("search", "x")):
        proc = rematch(*cmd, "--data", str(afile))
        assert proc.returncode == 2, (cmd, proc.stderr)
        assert proc.stderr.strip() == f"Error: {afile} is a file, not a data folder (--data): name a folder, " \
                                      "or a path that does not exist yet", proc.stderr
        assert afile.read_text() == ""


def test_an_empty_folder_names_every_pattern_read_and_no_data_folder(tmp_path: Path) -> None:
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    proc = rematch("import", str(tmp_path / "empty"), "--data", str(tmp_path / "d"))
    assert proc.returncode == 1
    looked = proc.stderr.split("looked for ")[1]
    for pattern in ("*.jsonl", "*.jsonl.gz", "*.json", "opencode*.db", "ses_*.json"):
        assert pattern in looked, looked
    assert not (tmp_path / "d").exists()
    assert "data: " not in proc.stdout and "no data folder was made" in proc.stdout


def test_a_gone_transcript_says_so_instead_of_no_output_per_call(tmp_path: Path) -> None:
    data = tmp_path / "d"
    src = transcript(tmp_path / "src")
    assert rematch("import", str(src), "--data", str(data)).returncode == 0
    src.unlink()
    # What the import stored of the conversation is read, not the transcript: its outputs are all there.
    text = rematch("show", CC_ID, "--conversation", "--data", str(data)).stdout
    assert "is gone" not in text and "(no output in the transcript)" not in text
    assert "all 87 tests pass" in text
    # A data folder without the stored conversation (made before it was stored) says the transcript is gone.
    shutil.rmtree(data / "conversations")
    text = rematch("show", CC_ID, "--conversation", "--data", str(data)).stdout
    assert "is gone: only the trace's records are shown" in text
    assert "(no output in the transcript)" not in text
    assert "(output not shown: the source transcript is gone)" in text
    md = rematch("show", CC_ID, "--format", "markdown", "--data", str(data)).stdout
    assert "(output not shown: the source transcript is gone)" in md
    assert rematch("report", "--data", str(data)).returncode == 0
    page = (data / "report" / "sessions" / f"{CC_ID}.html").read_text()
    assert "No output in the transcript" not in page and "Output not shown: the source transcript is gone." in page


def test_markdown_titles_a_shell_escape_and_its_output(tmp_path: Path) -> None:
    lines = OMP.read_text().splitlines()
    bash = {"type": "message", "id": "b0000001", "parentId": "a0000003", "timestamp": "2026-05-04T11:00:03.500Z",
            "message": {"role": "bashExecution", "command": "git status --short", "output": " M src/invoice.py\n",
                        "exitCode": 0, "timestamp": 1777892403500}}
    src = tmp_path / "src" / "sessions" / "--home-dev-billing--" / OMP.name
    src.parent.mkdir(parents=True)
    after = lines[5].replace('"parentId":"a0000003"', '"parentId":"b0000001"')  # the tree goes on from it
    src.write_text("\n".join([*lines[:5], json.dumps(bash), after, *lines[6:]]) + "\n")
    data = tmp_path / "d"
    assert rematch("import", str(src), "--data", str(data)).returncode == 0
    md = rematch("show", "0198e0aa", "--format", "markdown", "--data", str(data)).stdout
    assert "Tool `output`" not in md
    assert "## User ran a shell command" in md and "!git status --short" in md
    assert "## Shell command output" in md and "M src/invoice.py" in md


def test_forget_takes_the_sessions_under_it_too(tmp_path: Path) -> None:
    src, data = tmp_path / "src", tmp_path / "d"
    main = transcript(src)
    sub = src / CC_ID / "subagents" / "agent-abc123.jsonl"
    sub.parent.mkdir(parents=True)
    sub.write_text("".join(json.dumps({**json.loads(line), "isSidechain": True, "agentId": "abc123"}) + "\n"
                           for line in main.read_text().splitlines()))
    assert rematch("import", str(src), "--data", str(data)).returncode == 0
    assert len(list((data / "traces").glob("*.jsonl"))) == 2
    proc = rematch("forget", CC_ID, "--data", str(data))
    assert proc.returncode == 0 and "and 1 session under it" in proc.stdout, proc.stdout + proc.stderr
    assert not list((data / "traces").glob("*.jsonl")) and not list((data / "events").glob("*.jsonl"))
    assert rematch("sessions", "--data", str(data), "--flat").returncode == 1  # no row left
    assert rematch("search", "build", "--data", str(data)).returncode == 1  # nor an indexed record
    again = rematch("import", str(src), "--data", str(data))
    assert again.returncode == 0 and "2 sessions imported" in again.stdout


def test_a_policy_file_reports_every_mistake_with_its_line(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yml"
    policy.write_text("version: 1\ndefault: maybe\nrules:\n  - id: ok-rule\n    decision: deny\n  - id: Bad!\n"
                      "    decision: perhaps\n    when:\n      colour: red\n      any_features: [evil]\n")
    proc = rematch("policy", "show", "--policy", str(policy))
    assert proc.returncode == 2
    lines = [line.strip() for line in proc.stderr.splitlines()[1:]]
    assert [line.split(": ", 2)[:2] for line in lines] == [
        [f"{policy}:2", "default"], [f"{policy}:6", "rules[1].id"], [f"{policy}:7", "rules[1].decision"],
        [f"{policy}:9", "rules[1].when.colour"], [f"{policy}:10", "rules[1].when.any_features"]], proc.stderr
    home = tmp_path / "home"
    home.mkdir()
    doctor = rematch("doctor", "--data", str(tmp_path / "d"), env={"REMATCH_POLICY": str(policy), "HOME": str(home)})
    said = doctor.stdout + doctor.stderr
    assert doctor.returncode == 1 and all(f"{policy}:{n}:" in said for n in (2, 6, 7, 9, 10)), said


def test_a_misspelt_command_gets_a_did_you_mean() -> None:
    proc = rematch("sesions")
    assert proc.returncode == 2 and "No such command 'sesions'. Did you mean 'sessions'?" in proc.stderr
    assert "Did you mean" not in rematch("zzzz").stderr


# -- totals like ccusage: stats --by day|week|month|session, --until ----------------------------------------


def test_stats_by_period_adds_up_to_the_same_total(corpus_dir: Path, tmp_path: Path) -> None:
    import datetime as dt
    from decimal import Decimal

    data = tmp_path / "d"
    assert rematch("import", str(corpus_dir), "--data", str(data)).returncode in (0, 1)  # the corpus has bad lines
    plain = json.loads(rematch("stats", "--data", str(data), "--json").stdout)["total"]
    seen = {}
    for by in ("day", "week", "month", "session"):
        proc = rematch("stats", "--data", str(data), "--json", "--by", by)
        assert proc.returncode == 0, proc.stderr
        got = json.loads(proc.stdout)
        total = got["total"]
        # Every grouping adds up to stats' own total, tokens and exact cost alike, and so do its rows.
        assert (total["tokens"], Decimal(total["cost"])) == (plain["tokens"], Decimal(plain["cost"])), by
        assert sum(r["tokens"] for r in got["rows"]) == total["tokens"]
        assert sum(r["input"] + r["output"] + r["cache_write"] + r["cache_read"] for r in got["rows"]) == total["tokens"]
        assert sum(Decimal(r["cost"] or 0) for r in got["rows"]) == Decimal(total["cost"])
        seen[by] = [r["period"] for r in got["rows"]]
    assert all(dt.date.fromisoformat(w).weekday() == 0 for w in seen["week"])
    assert all(len(m) == 7 for m in seen["month"]) and seen["month"] == sorted(seen["month"])
    assert len(seen["day"]) >= len(seen["week"]) >= len(seen["month"])
    # --since/--until choose the usage by its day; the table's last line is the total.
    day = seen["day"][len(seen["day"]) // 2]
    one = json.loads(rematch("stats", "--data", str(data), "--json", "--by", "day", "--since", day, "--until", day).stdout)
    assert [r["period"] for r in one["rows"]] == [day]
    text = rematch("stats", "--data", str(data), "--by", "month", env={"TZ": "UTC"}).stdout.splitlines()
    assert text[0].split()[:4] == ["month", "input", "output", "cache"] and text[-2].startswith("total")
    assert text[-1] == "times in UTC"
    assert max(len(line) for line in text) <= 80
    later = rematch("stats", "--data", str(data), "--by", "day", "--since", "2099-01-01")
    assert later.returncode == 1 and later.stdout.strip() == "no usage matches"
    until = json.loads(rematch("stats", "--data", str(data), "--json", "--until", seen["day"][0]).stdout)
    assert until["total"]["sessions"] < json.loads(rematch("stats", "--data", str(data), "--json").stdout)["total"]["sessions"]
