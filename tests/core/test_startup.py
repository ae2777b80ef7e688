"""What a rerun with nothing changed costs at start-up: no worker process, none of a file import's modules.

Run as a user runs ``rematch import`` (a process of its own, every installed
plugin loaded); the probe records the forks the process made and the modules
it loaded. Nothing here is timed: bench/README.md has the figures.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "transcripts"

#: Runs the console script's entry point, then writes what the process did to the file in argv[1].
PROBE = r"""
import json, os, sys
report, early = sys.argv[1], int(sys.argv[2])
forks = []
os.register_at_fork(before=lambda: forks.append(1))
if early:
    import rematch_trace.importing.batch as batch
    batch.EARLY_FORK_SOURCES = early
sys.argv = ["rematch", *sys.argv[3:]]
from rematch_trace.cli import main
code = 0
try:
    main()
except SystemExit as stop:
    code = stop.code
with open(report, "w") as f:
    json.dump({"code": code, "forks": len(forks), "modules": sorted(sys.modules)}, f)
"""

#: What only importing a file needs: an unchanged rerun loads none of them.
FILE_IMPORT_ONLY = (
    "multiprocessing",
    "rematch_trace.importing.outcome",
    "rematch_trace.importing.source_import",
    "rematch_trace.importing.reader",
    "rematch_trace.store.states",
    "rematch_trace.host.vocab",
    "rematch_trace.trace.synth",
    "rematch_trace.security.events",
)


def run(tmp_path: Path, *args: str, early: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    report = tmp_path / "probe.json"
    env = {k: v for k, v in os.environ.items() if k != "REMATCH_LOAD_PLUGINS"}
    res = subprocess.run([sys.executable, "-c", PROBE, str(report), str(early), "import", *args, "--json"],
                         capture_output=True, text=True, env=env, timeout=120)
    probe = json.loads(report.read_text())
    assert probe["code"] == 0, res.stderr
    return probe, json.loads(res.stdout)


def test_an_unchanged_rerun_forks_no_worker_and_loads_no_file_import(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(EXAMPLES, src)
    out = str(tmp_path / "data")
    probe, summary = run(tmp_path, str(src), "--out", out, "--jobs", "2")
    assert summary["files"]["imported"] == 4
    assert probe["forks"] == 2  # a first import is work whatever its size: both workers forked up front

    probe, summary = run(tmp_path, str(src), "--out", out, "--jobs", "2")
    assert summary["files"]["unchanged"] == 4
    assert probe["forks"] == 0
    loaded = set(probe["modules"])
    assert not loaded & set(FILE_IMPORT_ONLY), sorted(loaded & set(FILE_IMPORT_ONLY))

    # Something to do: a worker is forked for it (one file: one worker), and the import runs as ever.
    toy = src / "toy" / "demo.jsonl"
    toy.write_text(toy.read_text() + '{"t": 1778000000000, "user": "and once more"}\n')
    probe, summary = run(tmp_path, str(src), "--out", out, "--jobs", "2")
    assert summary["files"] == {**summary["files"], "resumed": 1, "unchanged": 3}
    assert probe["forks"] == 1


def test_a_ledger_of_many_sources_has_its_workers_forked_before_discovery(tmp_path: Path) -> None:
    # Forked after the planning of 100,000 files, each worker would start with that memory:
    # from EARLY_FORK_SOURCES sources up (lowered here to the four files at hand), they are
    # forked first, even for a rerun that then finds nothing to do.
    out = str(tmp_path / "data")
    run(tmp_path, str(EXAMPLES), "--out", out, "--jobs", "2")
    probe, summary = run(tmp_path, str(EXAMPLES), "--out", out, "--jobs", "2", early=4)
    assert summary["files"]["unchanged"] == 4
    assert probe["forks"] == 2
    probe, _ = run(tmp_path, str(EXAMPLES), "--out", out, "--jobs", "2", early=5)
    assert probe["forks"] == 0


def test_an_import_without_a_configuration_loads_no_yaml(tmp_path: Path, monkeypatch: Any) -> None:
    # PyYAML is loaded only to parse a file there is (a configuration, a repository's domain.yml, the
    # price table the sessions' stored summaries are costed at): a rerun without a configuration that
    # finds nothing changed does not load it; with one, its domain rules apply.
    src = tmp_path / "src"
    shutil.copytree(EXAMPLES, src)
    monkeypatch.setenv("REMATCH_CONFIG", str(tmp_path / "none.yml"))
    probe, summary = run(tmp_path, str(src), "--out", str(tmp_path / "data"), "--jobs", "1")
    assert summary["files"]["imported"] == 4
    probe, summary = run(tmp_path, str(src), "--out", str(tmp_path / "data"), "--jobs", "1")
    assert summary["files"]["unchanged"] == 4
    assert "yaml" not in probe["modules"]
    config = tmp_path / "config.yml"
    config.write_text("domains:\n  - path: '/*'\n    domain: everywhere\n")
    monkeypatch.setenv("REMATCH_CONFIG", str(config))
    probe, summary = run(tmp_path, str(src), "--out", str(tmp_path / "data2"), "--jobs", "1")
    assert "yaml" in probe["modules"]
    from rematch_trace.store.ledger import Ledger

    with Ledger(tmp_path / "data2" / "ledger.sqlite", readonly=True) as ledger:
        domains = {row["domain"] for row in ledger.sessions()}
    assert domains == {"everywhere"}


def probe_command(tmp_path: Path, *args: str) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    """``rematch ARGS`` run as a user runs it, with the probe's record of what it loaded."""
    report = tmp_path / "probe.json"
    env = {k: v for k, v in os.environ.items() if k != "REMATCH_LOAD_PLUGINS"}
    res = subprocess.run([sys.executable, "-c", PROBE, str(report), "0", *args],
                         capture_output=True, text=True, env=env, timeout=120)
    return json.loads(report.read_text()), res


def test_listing_stored_summaries_loads_no_yaml_and_no_cattrs(tmp_path: Path) -> None:
    # The day-two commands read summaries stored by the import: the price table's YAML is parsed only
    # for a price (stats prints its date), cattrs only to structure a summary; a user's prices.yml is
    # still parsed at once, so that a broken one is said before any work.
    out = str(tmp_path / "data")
    probe, res = probe_command(tmp_path, "import", str(EXAMPLES), "--out", out, "--jobs", "1")
    assert probe["code"] == 0, res.stderr
    for command in ("sessions", "flagged"):
        probe, res = probe_command(tmp_path, command, "--data", out)
        assert probe["code"] == 0, res.stderr
        assert "session" in res.stdout
        assert not {"yaml", "cattrs"} & set(probe["modules"]), command
    probe, res = probe_command(tmp_path, "sessions", "--data", out, "--json")
    assert probe["code"] == 0 and len(json.loads(res.stdout)) >= 4
    probe, res = probe_command(tmp_path, "stats", "--data", out)
    assert probe["code"] == 0 and "prices as of 20" in res.stdout
    (tmp_path / "data" / "prices.yml").write_text("models: [not, a, mapping\n")
    probe, res = probe_command(tmp_path, "sessions", "--data", out)
    assert probe["code"] == 2 and "prices.yml:2:1: not YAML" in res.stderr


def test_the_command_list_loads_no_command_s_machinery() -> None:
    """``rematch --help`` imports every command's module for its one-line help: those modules keep their
    heavy imports inside the commands (the search index and attrs, for ``search --kind``'s choices)."""
    probe = ("import sys\nsys.argv = ['rematch', '--help']\nfrom rematch_trace.cli import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\nprint(' '.join(sorted(sys.modules)), file=sys.stderr)\n")
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert "search" in res.stdout  # the control: the search command is listed
    loaded = set(res.stderr.split())
    assert not loaded & {"rematch_trace.store.search_index", "attr", "attrs", *FILE_IMPORT_ONLY}
