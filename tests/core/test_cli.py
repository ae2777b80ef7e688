"""The command end to end, in a subprocess, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "examples" / "transcripts" / "toy"


def rematch(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    e = {**os.environ, "REMATCH_LOAD_PLUGINS": "toy", **(env or {})}
    return subprocess.run([sys.executable, "-m", "rematch_trace.cli", *args], capture_output=True, text=True, env=e,
                          timeout=120)


def test_plugins_lists_installed_with_hooks() -> None:
    res = rematch("plugins", "--json")
    assert res.returncode == 0, res.stderr
    plugins = json.loads(res.stdout)
    toy = next(p for p in plugins if p["name"] == "toy")
    assert toy["version"] == "0.1.0"
    assert {"detect_source", "read_transcript", "to_trace_records"} <= set(toy["hooks"])
    text = rematch("plugins")
    assert "toy 0.1.0" in text.stdout


def test_load_plugins_env_restricts() -> None:
    res = rematch("plugins", "--json", env={"REMATCH_LOAD_PLUGINS": ""})
    assert json.loads(res.stdout) == []


def test_import_flagged_show(tmp_path: Path) -> None:
    out = tmp_path / "data"
    res = rematch("import", str(TOY), "--out", str(out), "--json", "--no-events")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["sessions_imported"] == 1 and report["sessions_flagged"] == 1
    assert report["flag_reasons"] == {"redirect": 1}
    flagged = json.loads(rematch("flagged", "--out", str(out), "--json").stdout)
    assert flagged[0]["session_id"] == "toy-demo-1" and flagged[0]["seqs"]["redirect"] == [8]
    shown = rematch("show", "toy-demo", "--out", str(out))
    assert shown.returncode == 0 and "<interrupt>" in shown.stdout and "session_shutdown" in shown.stdout
    again = json.loads(rematch("import", str(TOY), "--out", str(out), "--json", "--no-events").stdout)
    assert again["files"]["unchanged"] == 1


def test_bad_input_exits_nonzero_with_one_line(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    good = (TOY / "demo.jsonl").read_text()
    (src / "bad.jsonl").write_text(good.replace('"user": "list', '"user": list', 1))
    res = rematch("import", str(src), "--out", str(tmp_path / "d"), "--no-events")
    assert res.returncode == 1
    assert f"{src / 'bad.jsonl'}:2: invalid JSON" in res.stderr
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr
    assert "1 sessions imported" in res.stdout


def test_env_home_and_lake_migrate(tmp_path: Path) -> None:
    home = tmp_path / "home"
    res = rematch("import", str(TOY), "--no-events", "-q", env={"REMATCH_HOME": str(home)})
    assert res.returncode == 0 and (home / "ledger.sqlite").exists()
    cfg = tmp_path / "config.yml"
    cfg.write_text("domains:\n  - path: /tmp/toy-*\n    domain: toys\n")
    res = rematch("lake", "migrate", env={"REMATCH_HOME": str(home), "REMATCH_CONFIG": str(cfg)})
    assert res.returncode == 0 and "1 domains changed" in res.stdout, res.stdout + res.stderr


def test_unexpected_error_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    # The data folder's parent is a file: no traceback, one line.
    res = rematch("flagged", "--out", str(blocker / "data"))
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
