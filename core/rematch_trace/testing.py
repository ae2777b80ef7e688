"""Contract-test helpers for plugin authors (and this project's own tests).

Run your plugin through the real core over your own fixtures and check every
record it leads to::

    from rematch_trace.testing import check_plugin
    import my_plugin

    def test_contract(tmp_path):
        sessions = check_plugin(my_plugin, ["tests/fixtures/session.jsonl"], out=tmp_path)
        assert sessions[0].records[0]["ev"] == "session_start"

:func:`check_plugin` raises :class:`ContractError` listing every violation.
"""

from __future__ import annotations

import importlib.resources
import tempfile
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import attrs
import orjson
import pluggy

from rematch_trace.host import hookspecs
from rematch_trace.host.facade import Host
from rematch_trace.host.source import Problem
from rematch_trace.importing.source_import import import_source
from rematch_trace.store.datafolder import DataDir
from rematch_trace.trace.records import from_dict

DEFAULT_PLUGIN = "rematch_trace.host.default_plugins.place"


class ContractError(AssertionError):
    """A plugin led to records that break the trace contract."""


@attrs.define
class SynthesizedSession:
    """One session imported in a test: its trace and event records as dicts."""

    session_id: str
    agent_kind: str
    records: list[dict[str, Any]]
    events: list[dict[str, Any]]
    problems: list[Problem]
    flagged: bool
    reasons: list[str]


def make_host(plugins: Iterable[Any]) -> Host:
    """A host over a private plugin manager holding the built-ins and ``plugins``."""
    import importlib

    pm = pluggy.PluginManager("rematch")
    pm.add_hookspecs(hookspecs)
    pm.register(importlib.import_module(DEFAULT_PLUGIN), DEFAULT_PLUGIN)
    for i, plugin in enumerate(plugins):
        pm.register(plugin, name=getattr(plugin, "__name__", f"plugin{i}"))
    pm.check_pending()
    return Host(pm)


def _read_jsonl(path: Path | None) -> list[dict[str, Any]]:
    if path is None or not path.exists():
        return []
    with open(path, "rb") as f:
        return [orjson.loads(line) for line in f if line.strip()]


def synthesize_file(
    path: str | Path,
    plugins: Sequence[Any],
    *,
    out: str | Path | None = None,
    hint: str | None = None,
    events: bool = True,
    redact: bool = True,
) -> list[SynthesizedSession]:
    """Import one file through ``plugins`` and the core; return its sessions.

    :param out: a data folder to write to (a temporary one when omitted).
    :param hint: the harness to hint at detection, as a default location would.
    :param events: build the security event stream too.
    :param redact: redact credentials in the trace.
    """
    host = make_host(plugins)
    path = Path(path)
    source = host.detect(path, hint)
    if source is None:
        raise ContractError(f"no plugin claimed {path}")
    tmp = None
    if out is None:
        tmp = tempfile.TemporaryDirectory(prefix="rematch-test-")
        out = tmp.name
    try:
        data = DataDir(Path(out))
        data.ensure()
        from rematch_trace.importing.pipeline import redactors, sink_factory_for

        r_text, r_input = redactors(redact)
        outcome = import_source(
            host,
            source,
            data,
            sink_factory=sink_factory_for(host) if events else None,
            redact=r_text,
            redact_input=r_input,
        )
        return [
            SynthesizedSession(
                session_id=s.session_id,
                agent_kind=s.agent_kind,
                records=_read_jsonl(s.trace_path),
                events=_read_jsonl(s.events_path),
                problems=list(outcome.problems),
                flagged=s.flagged,
                reasons=list(s.reasons),
            )
            for s in outcome.sessions
        ]
    finally:
        if tmp is not None:
            tmp.cleanup()


@cache
def trace_schema() -> dict[str, Any]:
    """The JSON Schema of one trace record, as shipped with the package."""
    text = importlib.resources.files("rematch_trace.trace").joinpath("schemas/trace.schema.json").read_bytes()
    result: dict[str, Any] = orjson.loads(text)
    return result


def validate_trace(records: Sequence[dict[str, Any]]) -> list[str]:
    """Every way a trace breaks the contract; an empty list when it holds."""
    errors: list[str] = []
    try:
        import jsonschema

        validator: Any = jsonschema.Draft202012Validator(trace_schema())
    except ImportError:  # the structural checks below still run
        validator = None
    if not records:
        return ["empty trace"]
    if records[0].get("ev") != "session_start":
        errors.append("first record is not session_start")
    if records[-1].get("ev") != "session_shutdown":
        errors.append("last record is not session_shutdown")
    for i, rec in enumerate(records):
        if rec.get("seq") != i:
            errors.append(f"record {i}: seq {rec.get('seq')} (expected {i})")
        if validator is not None:
            for err in validator.iter_errors(rec):
                errors.append(f"seq {i} ({rec.get('ev')}): {err.message}")
        try:
            from_dict(rec)
        except Exception as err:
            errors.append(f"seq {i} ({rec.get('ev')}): {err}")
    return errors


def check_plugin(
    plugin: Any, paths: Iterable[str | Path], *, out: str | Path | None = None, hint: str | None = None
) -> list[SynthesizedSession]:
    """Run ``plugin`` over fixture files and validate every trace record it leads to."""
    sessions: list[SynthesizedSession] = []
    problems: list[str] = []
    for path in paths:
        for s in synthesize_file(path, [plugin], out=out, hint=hint):
            for err in validate_trace(s.records):
                problems.append(f"{path} [{s.session_id}]: {err}")
            sessions.append(s)
    if problems:
        raise ContractError("\n".join(problems))
    return sessions
