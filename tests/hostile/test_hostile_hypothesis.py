"""Property tests (Hypothesis) over generated transcripts of each harness.

Structurally plausible transcripts (valid lines with fields replaced by random
JSON, lines dropped, repeated and reordered) and random byte mutations of valid
files must import without raising, give traces that validate, and re-import
byte-identically.
"""

from __future__ import annotations

import copy
import shutil
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from hostile_gen import HARNESSES, dump, lines_for, path_for, sid_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rematch_claude_code
import rematch_codex
import rematch_omp
from rematch_trace.host.facade import Host
from rematch_trace.importing.settings import ImportSettings
from rematch_trace.importing.source_import import import_source
from rematch_trace.store.datafolder import DataDir
from rematch_trace.testing import make_host, validate_trace

HOST: Host = make_host([rematch_claude_code, rematch_codex, rematch_omp])
SETTINGS = settings(max_examples=100, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out.append((*prefix, k))
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.append((*prefix, i))
            out.extend(_paths(v, (*prefix, i)))
    return out


@st.composite
def transcripts(draw: st.DrawFn, harness: str) -> bytes:
    """A plausible transcript: valid lines, some fields replaced, some lines dropped, repeated or moved."""
    lines = lines_for(harness, turns=draw(st.integers(min_value=1, max_value=4)))
    for _ in range(draw(st.integers(min_value=0, max_value=6))):
        i = draw(st.integers(min_value=0, max_value=len(lines) - 1))
        op = draw(st.sampled_from(["set", "drop_field", "drop_line", "repeat", "move"]))
        if op in ("set", "drop_field"):
            paths = _paths(lines[i])
            if not paths:
                continue
            path = draw(st.sampled_from(paths))
            line = copy.deepcopy(lines[i])
            cur: Any = line
            for k in path[:-1]:
                cur = cur[k]
            if op == "set":
                cur[path[-1]] = draw(json_values)
            elif isinstance(cur, dict):
                del cur[path[-1]]
            else:
                cur.pop(path[-1])
            lines[i] = line
        elif op == "drop_line" and len(lines) > 1:
            del lines[i]
        elif op == "repeat":
            lines.insert(i, copy.deepcopy(lines[i]))
        elif op == "move":
            j = draw(st.integers(min_value=0, max_value=len(lines) - 1))
            lines.insert(j, lines.pop(i))
    return b"".join(dump(x) for x in lines)


@st.composite
def byte_mutations(draw: st.DrawFn, harness: str) -> bytes:
    """A valid transcript with random bytes flipped, inserted, deleted, or the file cut short."""
    data = bytearray(b"".join(dump(x) for x in lines_for(harness, turns=2)))
    for _ in range(draw(st.integers(min_value=1, max_value=8))):
        if not data:
            break
        pos = draw(st.integers(min_value=0, max_value=len(data) - 1))
        op = draw(st.sampled_from(["flip", "insert", "delete", "cut", "newline"]))
        if op == "flip":
            data[pos] = draw(st.integers(min_value=0, max_value=255))
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[pos : pos + draw(st.integers(min_value=1, max_value=16))]
        elif op == "cut":
            del data[pos:]
        else:
            data[pos:pos] = b"\n"
    return bytes(data)


def import_twice(harness: str, data: bytes) -> None:
    """Import ``data`` into two fresh folders: no exception, valid traces, identical bytes."""
    with tempfile.TemporaryDirectory(prefix="rematch-hyp-") as tmp:
        root = Path(tmp)
        src = path_for(root / "src", harness, sid_for(harness))
        src.parent.mkdir(parents=True)
        src.write_bytes(data)
        outputs = []
        for k in range(2):
            source = HOST.detect(src, harness)
            if source is None:
                return
            data_dir = DataDir(root / f"out{k}")
            data_dir.ensure()
            outcome = import_source(HOST, source, data_dir, ImportSettings())
            files = {}
            for s in outcome.sessions:
                body = s.trace_path.read_bytes()
                errors = validate_trace([orjson.loads(x) for x in body.splitlines()])
                assert not errors, errors[:3]
                files[s.trace_path.name] = body
                if s.events_path is not None:
                    files["events/" + s.events_path.name] = s.events_path.read_bytes()
            outputs.append(files)
            shutil.rmtree(data_dir.root)
        assert outputs[0] == outputs[1]


@pytest.mark.parametrize("harness", HARNESSES)
def test_plausible_transcripts(harness: str) -> None:
    @SETTINGS
    @given(transcripts(harness))
    def check(data: bytes) -> None:
        import_twice(harness, data)

    check()


@pytest.mark.parametrize("harness", HARNESSES)
def test_byte_mutations(harness: str) -> None:
    @SETTINGS
    @given(byte_mutations(harness))
    def check(data: bytes) -> None:
        import_twice(harness, data)

    check()
