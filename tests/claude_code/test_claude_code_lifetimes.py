"""A Claude Code file's process lifetimes: one ``session_shutdown`` each, as the live capture writes.

Claude Code 2.1.328 writes a ``cost-state`` line as its process leaves the session (an exit; a
``--resume`` then appends the next process's lines to the same file). The live capture appends a
``session_shutdown`` at each ``SessionEnd`` and continues after it on a resume, so the import ends a
lifetime at each ``cost-state`` line that later lines of the session follow. The rig's recording
(``fixtures/cc-2.1.328-resumed.jsonl``, four processes) imports with four shutdowns and four
``session_end`` events, and a file grown at any line and continued from its saved state gives the
cold import's bytes.
"""

from __future__ import annotations

from pathlib import Path

import orjson

import rematch_claude_code
from rematch_trace.host.facade import Host
from rematch_trace.importing.settings import ImportSettings
from rematch_trace.importing.source_import import SourceOutcome, import_source
from rematch_trace.store.datafolder import DataDir
from rematch_trace.store.states import SavedState, dump_saved, load_saved
from rematch_trace.testing import make_host

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "cc-2.1.328-resumed.jsonl"
SID = "7311890f-e961-4bf0-b08e-51b2b466e47c"
HOST: Host = make_host([rematch_claude_code])


def _import(path: Path, out: Path, saved: SavedState | None = None) -> SourceOutcome:
    source = HOST.detect(path, "claude_code")
    assert source is not None
    data = DataDir(out)
    data.ensure()
    return import_source(HOST, source, data, ImportSettings(),
                         saved=load_saved(dump_saved(saved)) if saved is not None else None)


def _outputs(out: Path) -> dict[str, bytes]:
    return {f"{kind}/{p.name}": p.read_bytes() for kind in ("traces", "events", "pending")
            for p in sorted((out / kind).glob("[!.]*")) if p.is_file()}


def _file(root: Path, lines: list[bytes]) -> Path:
    path = root / "projects" / "-rig" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(lines))
    return path


def test_each_process_lifetime_ends_with_a_shutdown(tmp_path: Path) -> None:
    lines = FIXTURE.read_bytes().splitlines(keepends=True)
    assert sum(orjson.loads(x).get("type") == "cost-state" for x in lines) == 4
    _import(_file(tmp_path / "src", lines), tmp_path / "out")
    data = DataDir(tmp_path / "out")
    trace = [orjson.loads(x) for x in data.trace_path(SID).read_bytes().splitlines()]
    evs = [r["ev"] for r in trace]
    assert evs.count("session_shutdown") == 4 and evs.count("session_start") == 1
    assert evs[-1] == "session_shutdown" and [r["seq"] for r in trace] == list(range(len(trace)))
    # Each shutdown ends a lifetime: an agent_end before it, the next process's input after it.
    for at in [i for i, ev in enumerate(evs) if ev == "session_shutdown"][:-1]:
        assert evs[at - 1] == "agent_end" and evs[at + 1] == "input", evs
    events = [orjson.loads(x) for x in data.events_path(SID).read_bytes().splitlines()]
    assert [e["kind"] for e in events].count("session_end") == 4


def test_a_grown_file_continues_to_its_cold_import(tmp_path: Path) -> None:
    lines = FIXTURE.read_bytes().splitlines(keepends=True)
    grown = tmp_path / "grown"
    cuts = sorted({*range(1, len(lines), 3), *(i + 1 for i, x in enumerate(lines) if b'"cost-state"' in x),
                   len(lines)})
    outcome = _import(_file(grown, lines[: cuts[0]]), grown / "out")
    for k, cut in enumerate(cuts[1:], 1):
        outcome = _import(_file(grown, lines[:cut]), grown / "out", outcome.saved)
        cold = tmp_path / f"cold-{k}"
        _import(_file(cold, lines[:cut]), cold / "out")
        assert _outputs(grown / "out") == _outputs(cold / "out"), f"cut at line {cut}"
