"""Issue 43, at a terminal: ``stats --by`` tables fit 80 columns, however large the counts; ``--wide`` keeps
every digit.

The real ``rematch stats`` draws on a pseudo-terminal 80 columns wide (test_terminal_interrupt's helper),
over an example Claude Code session whose cache reads were made a year of heavy use (billions of tokens).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hostile_gen import cli_env
from test_terminal_interrupt import _on_terminal

EXAMPLE = (Path(__file__).resolve().parents[2] / "examples" / "transcripts" / "claude_code" / "projects"
           / "-home-dev-webapp" / "5b1f0c3e-8a7d-4e52-9b61-2f0d7c4a9e11.jsonl")


def test_stats_by_tables_fit_the_terminal_and_wide_keeps_every_digit(tmp_path: Path) -> None:
    src, data = tmp_path / "src", tmp_path / "data"
    src.mkdir()
    text = EXAMPLE.read_text().replace('"cache_read_input_tokens":3000', '"cache_read_input_tokens":200000000000')
    (src / EXAMPLE.name).write_text(text)
    run = subprocess.run([sys.executable, "-m", "rematch_trace.cli", "import", str(src), "--data", str(data)],
                         env=cli_env(), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    for by in ("day", "week", "month", "session", "block"):
        args = ["stats", "--by", by, "--tz", "UTC", "--data", str(data)]
        code, drawn = _on_terminal(args, 80)
        lines = [line for line in drawn.split("\n") if line]
        assert code == 0 and lines[-1] == "times in UTC" and lines[-2].startswith("total"), drawn
        assert max(map(len, lines)) <= 80 and "400B" in lines[-2], drawn
        code, drawn = _on_terminal([*args, "--wide"], 80)
        assert code == 0 and "400,000,007,586" in drawn and max(map(len, drawn.split("\n"))) > 80, drawn
