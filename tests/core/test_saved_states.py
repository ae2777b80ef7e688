"""Saved states are typed at the edge, and what earlier versions saved still loads and resumes.

The two fixtures are ledger ``saved`` blobs written by the untyped code this
replaced (an import of ``examples/transcripts``): loading and saving them again
gives the same bytes. An older ledger, whose states lack fields added since,
still continues a grown file through the real ``rematch`` process.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from rematch_trace.security.sink_state import SinkState
from rematch_trace.store.states import Detected, SavedState, dump_saved, load_saved, structure, unstructure
from rematch_trace.trace.flags import FlagTracker
from rematch_trace.trace.synth_state import SynthState

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).resolve().parents[2]
CLAUDE = ROOT / "examples" / "transcripts" / "claude_code" / "projects" / "-home-dev-webapp"


@pytest.mark.parametrize("name", ["saved-state-claude_code.json", "saved-state-toy.json"])
def test_a_saved_state_of_the_untyped_code_loads_typed_and_saves_the_same_bytes(name: str) -> None:
    blob = (FIXTURES / name).read_bytes()
    state = load_saved(blob)
    assert isinstance(state, SavedState) and state.streams
    stream = next(iter(state.streams.values()))
    assert isinstance(stream.synth, SynthState) and isinstance(stream.synth.flags, FlagTracker)
    assert stream.trace_len > 0 and stream.synth.seq > 0
    assert dump_saved(state) == blob


def test_a_first_import_has_no_journal_field_and_a_continued_one_keeps_it() -> None:
    state = SavedState(offset=5, harness="toy")
    assert b"journal" not in dump_saved(state)
    again = load_saved(dump_saved(SavedState(offset=5, harness="toy", journal="abc")))
    assert again.journal == "abc" and dump_saved(again).endswith(b'"journal":"abc"}')


def test_fields_an_older_state_lacks_take_their_defaults() -> None:
    synth = structure({"seq": 3, "t": 10, "started": True}, SynthState)
    assert (synth.seq, synth.buffer, synth.calls, synth.flags.window, synth.input_at) == (3, [], {}, [], None)
    sink = structure({"n": 2, "t": 7, "started": True, "calls": {}}, SinkState)
    assert (sink.turn, sink.mode) == (None, None)
    assert unstructure(sink) == {"n": 2, "t": 7, "started": True, "calls": {}, "turn": None, "mode": None}


def test_optional_strings_and_numbers_convert_as_the_converter_always_did() -> None:
    # Their hooks are the converter's own rule written out (None stays, else the type made of the
    # value), not a pass-through: what a hand-edited or older state holds converts as before, and
    # what cannot be converted fails the state as a whole.
    sink = structure({"n": "2", "t": "7", "started": 1, "calls": {}, "turn": 5, "mode": None}, SinkState)
    assert (sink.n, sink.t, sink.started, sink.turn, sink.mode) == (2, 7, True, "5", None)
    state = structure({"offset": 5, "harness": None, "journal": "g", "detected": {"hint": None, "plugin": "p", "parent": 3}},
                      SavedState)
    assert (state.harness, state.journal, state.detected) == (None, "g", Detected(None, "p", parent="3"))
    assert unstructure(state)["detected"] == {"hint": None, "plugin": "p", "agent_kind": "main", "compression": "", "parent": "3"}
    with pytest.raises(ValueError):
        structure({"n": 1, "t": "seven"}, SinkState)


@pytest.mark.parametrize("bad", [b"[1, 2]", b'{"offset": "x"}', b'{"streams": {"": {"synth": 5}}}'])
def test_a_damaged_state_is_a_value_error(bad: bytes) -> None:
    with pytest.raises(ValueError):
        load_saved(bad)


def rematch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rematch_trace.cli", *args], capture_output=True, text=True,
                          timeout=120)


def _strip_to_an_older_ledger(ledger: Path) -> int:
    """Remove from every saved state the fields added after the first version, where they hold
    their defaults (as an older version, which did not write them, would have left them)."""
    db = sqlite3.connect(ledger)
    stripped = 0
    for path, blob in db.execute("SELECT path, saved FROM sources").fetchall():
        state = orjson.loads(blob)
        if state.get("head_skip") == 0:
            del state["head_skip"]
            stripped += 1
        if state.pop("detected", None) is not None:  # how the file was claimed: detected again
            stripped += 1
        for stream in state["streams"].values():
            for key in ("visible", "loaded"):
                if stream["synth"].get(key) == []:
                    del stream["synth"][key]
                    stripped += 1
            for key in ("turn", "mode"):
                if stream["sink"].get(key) is None:
                    del stream["sink"][key]
                    stripped += 1
        db.execute("UPDATE sources SET saved = ? WHERE path = ?", (orjson.dumps(state), path))
    db.commit()
    db.close()
    return stripped


def test_an_older_ledger_still_continues_a_grown_file(tmp_path: Path) -> None:
    [transcript] = CLAUDE.glob("*.jsonl")
    lines = transcript.read_bytes().splitlines(keepends=True)
    src = tmp_path / "src" / "projects" / "-home-dev-webapp" / transcript.name
    src.parent.mkdir(parents=True)
    src.write_bytes(b"".join(lines[:5]))
    os.utime(src, (time.time() - 100, time.time() - 100))
    out = tmp_path / "out"
    first = rematch("import", str(src.parent), "--out", str(out), "--json", "--quiet")
    assert first.returncode == 0, first.stderr
    assert _strip_to_an_older_ledger(out / "ledger.sqlite") >= 3
    src.write_bytes(b"".join(lines))
    grown = rematch("import", str(src.parent), "--out", str(out), "--json", "--quiet")
    assert grown.returncode == 0, grown.stderr
    assert orjson.loads(grown.stdout)["files"]["resumed"] == 1
    whole = tmp_path / "whole"
    fresh = tmp_path / "src2" / "projects" / "-home-dev-webapp" / transcript.name
    fresh.parent.mkdir(parents=True)
    shutil.copy(src, fresh)
    assert rematch("import", str(fresh.parent), "--out", str(whole), "--quiet").returncode == 0
    for folder in ("traces", "events"):
        mine = {p.name: p.read_bytes() for p in (out / folder).iterdir()}
        theirs = {p.name: p.read_bytes() for p in (whole / folder).iterdir()}
        assert mine == theirs and mine, folder


def test_rewritten_is_saved_only_for_a_document_and_survives_a_round_trip() -> None:
    """A log's state says nothing of ``rewritten`` (its bytes are those of earlier versions); a document's keeps it."""
    assert b"rewritten" not in dump_saved(SavedState(offset=5, harness="toy"))
    again = load_saved(dump_saved(SavedState(offset=5, harness="toy", rewritten=True)))
    assert again.rewritten is True
