"""pi's sessions are harness ``pi`` (rematch-pi), omp's ``omp``: from a zero-config import, in every listing.

Through the real ``rematch`` command, with a private HOME holding pi's folder (``~/.pi/agent/sessions``,
a file pi wrote: no title slot) and omp's (``~/.omp/agent/sessions``, with omp's title slot). And a
data folder an earlier rematch made, where pi's session was stored as ``omp``, comes right on the
next import: one session, ``pi``, its outputs and search rows kept, no ``omp`` row of it left.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from omp_build import Tree, assistant, header, title_slot, user, write

import rematch_omp
from rematch_omp.discover import claim
from rematch_trace.host.hookspecs import hookimpl
from rematch_trace.host.source import Location, Source

PI_SID = "pi-0000-1111-2222-333333333333"
OMP_SID = "0198cc2a-0000-7000-8000-0000000000aa"


REMATCH = [sys.executable, "-c", "import sys; from rematch_trace.cli import main; sys.argv[0] = 'rematch'; main()"]


def rematch(*args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    """The real ``rematch`` command, without the caller's REMATCH_ settings."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("REMATCH_", "PI_", "OMP_"))}
    return subprocess.run([*REMATCH, *args], capture_output=True, text=True, timeout=timeout, env={**clean, **env})


def _session(sid: str, word: str, slot: bool) -> list[dict[str, Any]]:
    tree = Tree()
    tree.msg(user(f"find the {word} please"))
    tree.msg(assistant(f"The {word} is found."))
    return [*([title_slot()] if slot else []), header(sid=sid, cwd=f"/work/{word}"), *tree.entries]


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    write(home / ".pi/agent/sessions/--work-p--/2026-08-21T14-02-10-500Z_pi.jsonl",
          _session(PI_SID, "pelican", slot=False))
    write(home / ".omp/agent/sessions/--work-o--/2026-08-21T14-02-10-500Z_omp.jsonl",
          _session(OMP_SID, "ocelot", slot=True))
    return home


def _cli(home: Path, *args: str) -> Any:
    res = rematch(*args, HOME=str(home), timeout=120)
    assert res.returncode in (0, 1), res.stdout + res.stderr
    return res


def _sessions(home: Path, data: Path, *more: str) -> list[tuple[str, str]]:
    res = _cli(home, "sessions", "--data", str(data), "--json", *more)
    return sorted((s["harness"], s["session_id"]) for s in json.loads(res.stdout or "[]"))


def _import(home: Path, data: Path) -> str:
    res = rematch("import", "--out", str(data), HOME=str(home), timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout + res.stderr


def test_pi_and_omp_are_each_their_own_harness(tmp_path: Path) -> None:
    home, data = _home(tmp_path), tmp_path / "data"
    _import(home, data)
    assert _sessions(home, data) == [("omp", OMP_SID), ("pi", PI_SID)]
    assert _sessions(home, data, "--harness", "pi") == [("pi", PI_SID)]
    assert _sessions(home, data, "--harness", "omp") == [("omp", OMP_SID)]
    stats = json.loads(_cli(home, "stats", "--data", str(data), "--json", "--harness", "pi").stdout)
    assert "pi" in json.dumps(stats) and stats != json.loads(
        _cli(home, "stats", "--data", str(data), "--json", "--harness", "omp").stdout)
    hits = json.loads(_cli(home, "search", "--data", str(data), "--json", "--harness", "pi", "pelican").stdout)
    assert hits and all(h["session_id"] == PI_SID for h in hits), hits
    none = _cli(home, "search", "--data", str(data), "--json", "--harness", "omp", "pelican")
    assert json.loads(none.stdout or "[]") == []
    # The report's harness filter (its choices are the sessions' "h") and badges name each harness.
    site = tmp_path / "site"
    res = rematch("report", "--data", str(data), "--out", str(site), HOME=str(home), timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    index = (site / "index.html").read_text()
    assert sorted(re.findall(r'"h": *"([a-z_]+)"', index)) == ["omp", "pi"]
    assert '<span class="harness h-pi">pi</span>' in index


class _EarlierOmp:
    """rematch-omp as it was before rematch-pi: pi's folder one of its own, every file there omp's."""

    __name__ = "rematch_omp"

    def __init__(self, home: Path) -> None:
        self.home = home

    @hookimpl
    def default_locations(self) -> list[Location]:
        """omp's folder and pi's, both ``omp``."""
        return [Location("omp", self.home / ".omp/agent/sessions"), Location("omp", self.home / ".pi/agent/sessions")]

    @hookimpl
    def detect_source(self, path: Path, head: bytes) -> Source | None:
        """Any file of the format, as omp's."""
        return claim("omp", path, head, "omp")

    read_transcript = staticmethod(rematch_omp.read_transcript)
    to_trace_records = staticmethod(rematch_omp.to_trace_records)
    conversation_items = staticmethod(rematch_omp.conversation_items)
    classify_action = staticmethod(rematch_omp.classify_action)


def _as_an_earlier_rematch_left_it(home: Path, data: Path) -> None:
    """The data folder an import by a rematch from before rematch-pi made: pi's session as ``omp``, in
    every output (ledger rows, stored summary, trace, events, search index), the ledger a schema back."""
    from rematch_trace.importing.batch import run_import
    from rematch_trace.importing.settings import ImportSettings
    from rematch_trace.importing.worker import use_host
    from rematch_trace.store.datafolder import DataDir
    from rematch_trace.store.search_index import sync_data
    from rematch_trace.testing import make_host

    host = make_host([_EarlierOmp(home)])
    use_host(host)
    try:
        summary = run_import([], DataDir(data), ImportSettings(), host=host)
    finally:
        use_host(None)
    assert summary.sessions_total == 2
    sync_data(DataDir(data))
    db = sqlite3.connect(data / "ledger.sqlite")
    version = db.execute("PRAGMA user_version").fetchone()[0]
    db.execute(f"PRAGMA user_version = {version - 1}")
    db.commit()
    db.close()


def test_a_data_folder_with_pi_stored_as_omp_comes_right_on_the_next_import(tmp_path: Path) -> None:
    home, data = _home(tmp_path), tmp_path / "data"
    _as_an_earlier_rematch_left_it(home, data)
    assert '"name":"omp"' in (data / "traces" / f"{PI_SID}.jsonl").read_text()
    assert _sessions(home, data) == [("omp", OMP_SID), ("omp", PI_SID)]
    said = _import(home, data)
    assert "claimed again" in said, said
    assert _sessions(home, data) == [("omp", OMP_SID), ("pi", PI_SID)]
    db = sqlite3.connect(data / "ledger.sqlite")
    rows = db.execute("SELECT harness, session_id FROM sessions ORDER BY session_id").fetchall()
    sources = db.execute("SELECT harness FROM sources ORDER BY harness").fetchall()
    db.close()
    assert sorted(rows) == [("omp", OMP_SID), ("pi", PI_SID)] and sources == [("omp",), ("pi",)]
    assert sorted(p.name for p in (data / "traces").glob("*.jsonl")) == sorted(
        [f"{OMP_SID}.jsonl", f"{PI_SID}.jsonl"])
    assert '"name":"pi"' in (data / "traces" / f"{PI_SID}.jsonl").read_text()
    assert '"agent":"omp"' not in (data / "events" / f"{PI_SID}.jsonl").read_text()
    hits = json.loads(_cli(home, "search", "--data", str(data), "--json", "--harness", "pi", "pelican").stdout)
    assert hits and {h["session_id"] for h in hits} == {PI_SID}
    assert json.loads(_cli(home, "search", "--data", str(data), "--json", "--harness", "omp", "pelican").stdout
                      or "[]") == []
    # Once: the next import finds nothing to do.
    again = _import(home, data)
    assert "claimed again" not in again and "0 skipped, 0 failed" in again, again


def test_a_folder_both_harnesses_write_to_gives_each_file_to_its_writer(tmp_path: Path) -> None:
    """``PI_CODING_AGENT_DIR`` is read by pi and omp alike: its ``sessions`` folder is both plugins' default,
    so the core hints at neither and each file goes to the harness that wrote it (omp's title slot)."""
    home, data, agent = tmp_path / "home", tmp_path / "data", tmp_path / "agent"
    write(agent / "sessions/--work-p--/2026-08-21T14-02-10-500Z_pi.jsonl", _session(PI_SID, "pelican", slot=False))
    write(agent / "sessions/--work-o--/2026-08-21T14-02-10-500Z_omp.jsonl", _session(OMP_SID, "ocelot", slot=True))
    res = rematch("import", "--out", str(data), HOME=str(home), PI_CODING_AGENT_DIR=str(agent))
    assert res.returncode == 0 and "2 sessions imported" in res.stdout, res.stdout + res.stderr
    assert _sessions(home, data) == [("omp", OMP_SID), ("pi", PI_SID)]
