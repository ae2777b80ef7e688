"""Wrong types in every field the importers read, missing fields, and values out of range.

For one valid sample line of each record kind of each harness, every field
(at any depth) is replaced by values of every other JSON type, or removed; the
import must not raise, every trace it writes must validate, and the file's
session must still import whenever its identifying line is intact.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile_gen import (
    HARNESSES,
    assert_clean_stderr,
    lines_for,
    path_for,
    report,
    run_import,
    sid_for,
    trace_records,
    traces,
    write,
)

import rematch_claude_code
import rematch_codex
import rematch_omp
from rematch_trace.host.facade import PluginFailure
from rematch_trace.importing.source_import import import_source
from rematch_trace.store.datafolder import DataDir
from rematch_trace.testing import make_host, validate_trace

PLUGINS = [rematch_claude_code, rematch_codex, rematch_omp]
_MISSING = object()
#: One value of every JSON type, plus the edges: negative, past 64 bits, empty containers.
VALUES: tuple[Any, ...] = (_MISSING, None, True, 0, -1, 2**70, 1.5e308, "", "x", [], [1, "a"], {}, {"k": "v"})


def kind_of(harness: str, line: dict[str, Any]) -> tuple[Any, ...]:
    """What makes two sample lines the same record kind (so only one of each is mutated)."""
    if harness == "codex":
        p = line.get("payload") or {}
        return line.get("type"), p.get("type"), p.get("role")
    m = line.get("message") or {}
    if harness == "omp":
        return line.get("type"), m.get("role")
    c = m.get("content")
    first = c[0].get("type") if isinstance(c, list) and c else type(c).__name__
    return line.get("type"), line.get("subtype"), first


def field_paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every field path in ``value`` (the first three items of each list)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield (*prefix, k)
            yield from field_paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:3]):
            yield (*prefix, i)
            yield from field_paths(v, (*prefix, i))


def replaced(line: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """``line`` with the field at ``path`` set to ``value`` (or removed)."""
    out = copy.deepcopy(line)
    cur: Any = out
    for k in path[:-1]:
        cur = cur[k]
    if value is _MISSING:
        if isinstance(cur, dict):
            del cur[path[-1]]
        else:
            cur.pop(path[-1])
    else:
        cur[path[-1]] = value
    return out


def variants(harness: str) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(label, lines) for every field of one line per record kind, replaced by every value.

    Each variant names its own session (``sid_for(harness, n + 1)``), so one
    batch of them imports to distinct traces.
    """
    lines = lines_for(harness)
    targets: list[tuple[int, tuple[Any, ...]]] = []
    seen: list[tuple[Any, ...]] = []
    for i, line in enumerate(lines):
        kind = kind_of(harness, line)
        if kind in seen:
            continue
        seen.append(kind)
        targets.extend((i, path) for path in field_paths(line))
    n = 0
    for i, path in targets:
        for value in VALUES:
            own = lines_for(harness, sid_for(harness, n + 1))
            n += 1
            label = f"line {i} {'.'.join(map(str, path))} = {'<missing>' if value is _MISSING else repr(value)[:20]}"
            yield label, [*own[:i], replaced(own[i], path, value), *own[i + 1 :]]


def is_identity_field(harness: str, label: str) -> bool:
    """Whether ``label`` breaks what makes the file claimable or names its session."""
    if harness == "omp":
        return label.startswith("line 0 ")
    if harness == "codex":
        return label.startswith(("line 0 type ", "line 0 payload ", "line 0 payload.id ", "line 0 payload.type"))
    return label.startswith(("line 0 type ", "line 0 sessionId "))


@pytest.mark.parametrize("harness", HARNESSES)
def test_every_field_every_type_in_process(harness: str, tmp_path: Path) -> None:
    host = make_host(PLUGINS)
    data = DataDir(tmp_path / "data")
    data.ensure()
    failures: list[str] = []
    total = 0
    for n, (label, lines) in enumerate(variants(harness)):
        total += 1
        sid = sid_for(harness, n + 1)
        f = write(path_for(tmp_path / "src", harness, sid), lines)
        source = host.detect(f, None)
        if source is None:
            if not is_identity_field(harness, label):
                failures.append(f"{label}: file no longer claimed")
            continue
        try:
            outcome = import_source(host, source, data)
        except PluginFailure as err:
            failures.append(f"{label}: {err}")
            continue
        finally:
            f.unlink()
        if not outcome.sessions and not is_identity_field(harness, label):
            failures.append(f"{label}: no session imported")
        for s in outcome.sessions:
            errors = validate_trace(trace_records(s.trace_path.read_bytes()))
            if errors:
                failures.append(f"{label}: {errors[:2]}")
            s.trace_path.unlink()
    assert total > 200
    assert not failures, f"{len(failures)} of {total} variants broke:\n" + "\n".join(failures[:30])


def test_wrong_types_through_the_cli(tmp_path: Path) -> None:
    """One CLI run over one variant per field (the value type rotating): no traceback, all accounted for."""
    src = tmp_path / "src"
    expected_files = 0
    for harness in HARNESSES:
        for n, (_label, lines) in enumerate(variants(harness)):
            if n % len(VALUES) != (n // len(VALUES)) % len(VALUES):
                continue  # one value per field, rotating through the types
            write(path_for(src, harness, sid_for(harness, n + 1)), lines)
            expected_files += 1
    out = tmp_path / "data"
    proc = run_import(out, src)
    assert_clean_stderr(proc)
    assert proc.returncode in (0, 1)
    rep = report(proc)
    files = rep["files"]
    assert files["failed"] == 0, rep["failures"]
    assert files["imported"] + files["skipped"] == expected_files
    assert rep["sessions_imported"] >= files["imported"]
    written = traces(out)
    assert len(written) == rep["sessions_imported"]
    for name, body in written.items():
        assert validate_trace(trace_records(body)) == [], name
