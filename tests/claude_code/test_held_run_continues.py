"""A grown real Claude Code file continued from its saved state gives what a cold import of it gives.

Real sessions hold long runs of tool calls back (the synthesizer waits for a
run's end, up to ``RUN_BUFFER_RECORDS``). Since the held run is no longer in the
saved state but read back from the trace's last lines, every corpus file is cut
at many points, imported, grown (in one step or several) and continued; the
trace, events and pending file must be the cold import's bytes. The same holds
from a state an earlier version saved (the held run inside it), and a trace
whose lines are not the ones the state expects is read whole.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kills import KillSchedule, kill_after

import rematch_claude_code
from rematch_trace.host.facade import Host
from rematch_trace.importing.batch import settle
from rematch_trace.importing.settings import ImportSettings
from rematch_trace.importing.source_import import SourceOutcome, import_source
from rematch_trace.store.datafolder import DataDir
from rematch_trace.store.states import SavedState, dump_saved, load_saved
from rematch_trace.testing import make_host
from rematch_trace.trace.synth import Synthesizer

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "claude_code"
HOST: Host = make_host([rematch_claude_code])
SETTINGS = ImportSettings()  # events and redaction, as the command imports


def _files() -> list[Path]:
    return sorted(CORPUS.rglob("*.jsonl")) if CORPUS.is_dir() else []


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


class _Copy:
    """A corpus file's copy under a temporary root, in the same layout (subagents find their parent)."""

    def __init__(self, root: Path, original: Path) -> None:
        self.path = root / "src" / original.relative_to(CORPUS)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, lines: list[bytes]) -> None:
        self.path.write_bytes(b"".join(lines))


def _import(path: Path, out: Path, saved: SavedState | None = None) -> SourceOutcome:
    source = HOST.detect(path, "claude_code")
    assert source is not None, path
    data = DataDir(out)
    data.ensure()
    # The saved state goes through its JSON, as the ledger keeps it.
    again = load_saved(dump_saved(saved)) if saved is not None else None
    return import_source(HOST, source, data, SETTINGS, saved=again)


def _outputs(out: Path) -> dict[str, bytes]:
    return {f"{kind}/{p.name}": p.read_bytes() for kind in ("traces", "events", "pending")
            for p in sorted((out / kind).glob("[!.]*")) if p.is_file()}


def _cold(root: Path, original: Path, lines: list[bytes], tag: str) -> dict[str, bytes]:
    copy = _Copy(root / f"cold-{tag}", original)
    copy.write(lines)
    _import(copy.path, root / f"cold-{tag}" / "out")
    return _outputs(root / f"cold-{tag}" / "out")


def _held(outcome: SourceOutcome) -> Iterator[int]:
    saved = outcome.saved
    assert saved is not None
    for stream in saved.streams.values():
        yield stream.synth.held


def _continue_through(root: Path, original: Path, cuts: list[int]) -> tuple[int, int]:
    """Import ``original`` cut at ``cuts[0]``, continue it at each later cut, and compare each step with a
    cold import of the same lines. Returns (continuations, held records restored from traces)."""
    lines = _lines(original)
    copy = _Copy(root / "grown", original)
    out = root / "grown" / "out"
    copy.write(lines[: cuts[0]])
    outcome = _import(copy.path, out)
    continued = held = 0
    for k, cut in enumerate(cuts[1:], 1):
        saved = outcome.saved
        held += sum(_held(outcome))
        copy.write(lines[:cut])
        outcome = _import(copy.path, out, saved)
        continued += outcome.resumed
        assert _outputs(out) == _cold(root, original, lines[:cut], str(k)), f"{original.name} cut at {cuts[: k + 1]}"
    return continued, held


@pytest.mark.parametrize("original", _files(), ids=lambda p: p.name)
def test_a_real_file_continued_at_many_points_is_its_cold_import(tmp_path: Path, original: Path) -> None:
    n = len(_lines(original))
    step = max(1, n // 12)
    cuts = sorted({*range(1, n, step), n})
    continued, _held_records = _continue_through(tmp_path, original, cuts)
    assert continued == len(cuts) - 1


def test_held_runs_are_restored_from_the_trace() -> None:
    # The largest real session's runs are long: its states keep them out, and its continuations read
    # them back (the test above compares the outputs; this one makes sure the path ran).
    if not _files():
        pytest.skip("shared corpus not present")
    original = max(_files(), key=lambda p: p.stat().st_size)
    n = len(_lines(original))
    # (its first quarter is a run of tool calls; later runs pass RUN_BUFFER_RECORDS and are written)
    cuts = list(range(n // 40, n // 4, n // 40))
    with _tmp() as root:
        continued, held = _continue_through(root, original, cuts)
    assert continued == len(cuts) - 1 and held > 10


class _tmp:
    """A temporary folder for a test that draws its own examples."""

    def __enter__(self) -> Path:
        import tempfile

        self.path = Path(tempfile.mkdtemp(prefix="rematch-held-"))
        return self.path

    def __exit__(self, *exc: Any) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_cuts_of_a_real_file_continue_to_its_cold_import(data: st.DataObject) -> None:
    files = [p for p in _files() if len(_lines(p)) > 3 and p.stat().st_size < 1_000_000]
    if not files:
        pytest.skip("shared corpus not present")
    original = data.draw(st.sampled_from(files))
    n = len(_lines(original))
    cuts = sorted(data.draw(st.sets(st.integers(1, n), min_size=2, max_size=4)))
    with _tmp() as root:
        continued, _held_records = _continue_through(root, original, cuts)
    assert continued == len(cuts) - 1


def test_a_state_saved_with_the_held_run_inside_still_continues(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # Earlier versions kept the held run in the state (Synthesizer.state() without held_out, the
    # code they ran): such a state, read by this version, continues to the cold import's bytes.
    original = max(_files(), key=lambda p: p.stat().st_size) if _files() else None
    if original is None:
        pytest.skip("shared corpus not present")
    lines = _lines(original)
    n = len(lines)
    inline = Synthesizer.state

    def earlier(self: Synthesizer, held_out: bool = False) -> Any:
        return inline(self)

    for k, cut in enumerate([n // 40, n // 10, n // 6]):
        copy = _Copy(tmp_path / f"old{k}", original)
        out = tmp_path / f"old{k}" / "out"
        copy.write(lines[:cut])
        with monkeypatch.context() as m:
            m.setattr(Synthesizer, "state", earlier)
            first = _import(copy.path, out)
        saved = first.saved
        assert saved is not None
        streams = list(saved.streams.values())
        assert all(s.synth.held == 0 for s in streams)
        assert any(s.synth.buffer for s in streams), "the cut should leave a run held"
        copy.write(lines[: cut + 5])
        again = _import(copy.path, out, saved)
        assert again.resumed
        assert _outputs(out) == _cold(tmp_path, original, lines[: cut + 5], f"old{k}")
        # ...and the state it saves now keeps its held run in the trace.
        assert any(h for h in _held(again)) or not any(s.synth.started for s in again.saved.streams.values())


def test_a_trace_not_holding_the_held_run_is_read_whole(tmp_path: Path) -> None:
    original = max(_files(), key=lambda p: p.stat().st_size) if _files() else None
    if original is None:
        pytest.skip("shared corpus not present")
    lines = _lines(original)
    cut = len(lines) // 10
    copy = _Copy(tmp_path, original)
    out = tmp_path / "out"
    copy.write(lines[:cut])
    first = _import(copy.path, out)
    saved = first.saved
    assert saved is not None
    [state] = [s for s in saved.streams.values() if s.synth.held]
    # The trace's held lines replaced by others (a trace edited since, or another file's): their seqs
    # are not the state's, so the file is imported whole, to the cold import's bytes.
    trace = next((out / "traces").glob("*.jsonl"))
    body = trace.read_bytes()
    kept, tail = body[: state.trace_len], body[state.trace_len:]
    trace.write_bytes(kept + tail.replace(b'{"seq":', b'{"seq":1', 1))
    copy.write(lines[: cut + 3])
    again = _import(copy.path, out, saved)
    assert not again.resumed
    assert _outputs(out) == _cold(tmp_path, original, lines[: cut + 3], "whole")


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "rematch_trace.cli", *args]


def _folder(out: Path) -> dict[str, bytes]:
    return {f"{kind}/{p.name}": p.read_bytes() for kind in ("traces", "events")
            for p in sorted((out / kind).glob("[!.]*")) if p.is_file()}


def test_a_killed_continuation_leaves_the_old_outputs_or_the_new(tmp_path: Path) -> None:
    # Real sessions cut inside a held run and grown so that the run goes on: the continuation keeps the
    # held lines where they are and appends after them. SIGKILLed at random moments, the data folder
    # holds the old outputs or the new (after the recovery every command runs first), and the next run
    # gives the cold import's bytes.
    files = [p for p in _files() if len(_lines(p)) > 100]
    if not files:
        pytest.skip("shared corpus not present")
    src, whole = tmp_path / "src", tmp_path / "whole"
    copies = []
    for original in files:
        lines = _lines(original)
        cut = len(lines) // 10
        copies.append((_Copy(tmp_path, original), lines[:cut], lines[: cut + 4]))
    for copy, before, _grown in copies:
        copy.write(before)
    base = tmp_path / "base"
    assert subprocess.run(_cli("import", str(src), "--out", str(base), "-q"), capture_output=True).returncode == 0
    old = _folder(base)
    with sqlite3.connect(base / "ledger.sqlite") as db:
        held = sum(load_saved(blob).streams[k].synth.held for (blob,) in db.execute("SELECT saved FROM sources")
                   for k in load_saved(blob).streams)
    assert held > 0, "the cuts should fall inside held runs"
    for copy, _before, grown in copies:
        copy.write(grown)
        target = whole / copy.path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"".join(grown))
    ref = tmp_path / "ref"
    assert subprocess.run(_cli("import", str(whole), "--out", str(ref), "-q"), capture_output=True).returncode == 0
    new = _folder(ref)
    assert old != new and set(old) == set(new)
    out = tmp_path / "out"
    shutil.copytree(base, out)
    started = time.monotonic()
    assert subprocess.run(_cli("import", str(src), "--out", str(out), "-q"), capture_output=True).returncode == 0
    full_run = time.monotonic() - started
    assert _folder(out) == new
    rnd = random.Random(16)
    schedule = KillSchedule(runs=10, landed=3, bound=30)
    for scale in schedule:
        shutil.rmtree(out)
        shutil.copytree(base, out)
        rc = kill_after(_cli("import", str(src), "--out", str(out), "-q"), rnd.uniform(0.3, 1.0) * full_run * scale)
        schedule.ended(rc is None)
        settle(DataDir(out))  # what every rematch command does first
        found = _folder(out)
        assert all(found[k] in (old[k], new[k]) for k in new), "a trace or event stream is neither old nor new"
        assert subprocess.run(_cli("import", str(src), "--out", str(out), "-q"), capture_output=True).returncode == 0
        assert _folder(out) == new
