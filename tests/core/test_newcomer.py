"""Issue 43, through the real ``rematch`` process: what tripped a newcomer up, fixed one by one.

Each test drives the command a user types and reads what the user reads (stdout, stderr, the exit
status, the files it leaves).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from test_cli_surprises import rematch, transcript

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
