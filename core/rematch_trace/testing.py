"""Contract-test helpers for plugin authors (and this project's own tests).

Run your plugin through the real core over your own fixtures and check every
record it leads to::

    from rematch_trace.testing import check_plugin
    import my_plugin

    def test_contract(tmp_path):
        sessions = check_plugin(my_plugin, ["tests/fixtures/session.jsonl"], out=tmp_path)
        assert sessions[0].records[0]["ev"] == "session_start"

:func:`check_plugin` raises :class:`ContractError` listing every violation. It
needs ``jsonschema`` (``pip install './[testing]'`` from rematch's checkout) and says so
rather than skip the schema check.
"""

from __future__ import annotations

import importlib.resources
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import attrs
import orjson
import pluggy

from rematch_trace.host import hookspecs, vocab
from rematch_trace.host.facade import Host, PluginFailure
from rematch_trace.host.source import Location, Problem, Source
from rematch_trace.importing.settings import ImportSettings
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


class _CheckingHost(Host):
    """A host that checks every vocabulary record a plugin yields against its declared types.

    A wrong type is raised inside the plugin's translation, so the failure names
    the plugin and the transcript line, not whichever later step it would break.
    """

    def _per_source(self, hook: str, source: Source, **kwargs: Any) -> Any:
        result = super()._per_source(hook, source, **kwargs)
        if hook == "to_trace_records" and result is not None:
            return _typed(result)
        return result


def _typed(records: Iterable[Any]) -> Iterator[Any]:
    for rec in records:
        wrong = vocab.field_errors(rec)
        if wrong:
            raise TypeError("; ".join(wrong))
        yield rec


def make_host(plugins: Iterable[Any], *, check_types: bool = False) -> Host:
    """A host over a private plugin manager holding the built-ins and ``plugins``.

    :param check_types: check every vocabulary record the plugins yield against
        its declared field types (a wrong one fails the file, naming the plugin).
    """
    import importlib

    pm = pluggy.PluginManager("rematch")
    pm.add_hookspecs(hookspecs)
    pm.register(importlib.import_module(DEFAULT_PLUGIN), DEFAULT_PLUGIN)
    for i, plugin in enumerate(plugins):
        pm.register(plugin, name=getattr(plugin, "__name__", f"plugin{i}"))
    pm.check_pending()
    return _CheckingHost(pm) if check_types else Host(pm)


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
    check_types: bool = False,
) -> list[SynthesizedSession]:
    """Import one file through ``plugins`` and the core; return its sessions.

    :param out: a data folder to write to (a temporary one when omitted).
    :param hint: the harness to hint at detection, as a default location would.
    :param events: build the security event stream too.
    :param redact: redact credentials in the trace.
    :param check_types: check each vocabulary record's field types as it is yielded.
    """
    host = make_host(plugins, check_types=check_types)
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
        outcome = import_source(host, source, data, ImportSettings(events=events, redact=redact))
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


@cache
def _schema_validator() -> Any:
    try:
        import jsonschema
    except ImportError:
        raise ImportError(
            "rematch_trace.testing validates traces against the trace schema with jsonschema, which is not "
            "installed: pip install './[testing]' from rematch's checkout"
        ) from None
    return jsonschema.Draft202012Validator(trace_schema())


def validate_trace(records: Sequence[dict[str, Any]]) -> list[str]:
    """Every way a trace breaks the contract; an empty list when it holds.

    Raises :class:`ImportError` when ``jsonschema`` is missing: a contract check
    that skipped the schema would pass what it never looked at.
    """
    errors: list[str] = []
    validator = _schema_validator()
    if not records:
        return ["empty trace"]
    if records[0].get("ev") != "session_start":
        errors.append("first record is not session_start")
    if records[-1].get("ev") != "session_shutdown":
        errors.append("last record is not session_shutdown")
    for i, rec in enumerate(records):
        if rec.get("seq") != i:
            errors.append(f"record {i}: seq {rec.get('seq')} (expected {i})")
        for err in validator.iter_errors(rec):
            errors.append(f"seq {i} ({rec.get('ev')}): {err.message}")
        try:
            from_dict(rec)
        except Exception as err:
            errors.append(f"seq {i} ({rec.get('ev')}): {err}")
    return errors


def conversation_of(path: str | Path, plugins: Sequence[Any], *, hint: str | None = None) -> list[Any] | None:
    """The conversation items ``plugins`` give for one file (``conversation_items``), each type-checked.

    ``None`` when the claiming plugin does not implement the hook (it is optional: its sessions
    then show "no conversation from this plugin" and keep their tool outputs out of search).
    Raises :class:`ContractError` for an item of the wrong type, a stream without its ``Session``
    first, or a call or output without a string call id.
    """
    from rematch_trace.host.conversation import Called, Returned, Spawned, item_errors
    from rematch_trace.host.source import RawRecord

    host = make_host(plugins)
    path = Path(path)
    source = host.detect(path, hint)
    if source is None:
        raise ContractError(f"no plugin claimed {path}")
    items = host.conversation(source, (r for r in host.read(source, 0) if isinstance(r, RawRecord)))
    if items is None:
        return None
    out: list[Any] = []
    opened: set[str] = set()
    problems: list[str] = []
    for i, item in enumerate(items):
        problems.extend(f"item {i}: {e}" for e in item_errors(item))
        stream = getattr(item, "stream", None)
        if isinstance(item, vocab.Session):
            opened.add(item.stream)
        elif stream not in opened:
            problems.append(f"item {i} ({type(item).__name__}): stream {stream!r} before its Session")
        if isinstance(item, (Called, Returned, Spawned)) and not isinstance(item.call_id, str):
            problems.append(f"item {i} ({type(item).__name__}): call_id is not a string")
        out.append(item)
    if problems:
        raise ContractError("\n".join(problems[:50]))
    return out


def check_plugin(
    plugin: Any, paths: Iterable[str | Path], *, out: str | Path | None = None, hint: str | None = None
) -> list[SynthesizedSession]:
    """Run ``plugin`` over fixture files and check everything it does against the contract.

    Checked: ``default_locations`` (it must not raise, and must answer
    :class:`~rematch_trace.host.source.Location` records only, ``names`` a tuple of
    patterns); ``source_members`` (``None`` or paths, for every fixture); every fixture
    is claimed; every vocabulary record has its fields' declared types; no hook
    raises (named with the hook and the transcript line); every trace record
    holds to the trace schema; and, when the plugin implements the optional
    ``conversation_items``, that its items have their declared types, open each
    stream with a ``Session`` whose id is one of the file's trace sessions (so the
    conversation view finds them); and, for the optional ``harness_plugin_template``,
    that each harness it names gets ``None`` or a folder with ``hooks/hooks.json`` (a
    JSON object) and an executable ``bin/rematch-hook``, and no ``bin/rematch_hook.py``
    (the core supplies it). Raises :class:`ContractError` listing each failure.
    """
    _schema_validator()  # a missing jsonschema fails first, before any fixture
    problems = _check_locations(plugin) + _check_template(plugin)
    sessions: list[SynthesizedSession] = []
    for path in paths:
        problems.extend(_check_members(plugin, Path(path)))
        try:
            found = synthesize_file(path, [plugin], out=out, hint=hint, check_types=True)
        except (ContractError, PluginFailure) as err:
            problems.append(f"{path}: {err}")
            continue
        for s in found:
            for msg in validate_trace(s.records):
                problems.append(f"{path} [{s.session_id}]: {msg}")
            sessions.append(s)
        try:
            items = conversation_of(path, [plugin], hint=hint)
        except (ContractError, PluginFailure) as err:
            problems.append(f"{path}: conversation_items: {err}")
            continue
        ids = {s.session_id for s in found}
        for item in items or ():
            if isinstance(item, vocab.Session) and item.session_id not in ids:
                problems.append(f"{path}: conversation_items opened session {item.session_id!r:.60}, "
                                f"which the trace has not (it has {sorted(ids)!r:.120})")
    if problems:
        raise ContractError("\n".join(problems))
    return sessions


def _check_locations(plugin: Any) -> list[str]:
    """What is wrong with the plugin's ``default_locations`` answer."""
    host = make_host([plugin])
    if not host.pm.hook.default_locations.get_hookimpls():
        return []
    try:
        answers = list(host.pm.hook.default_locations())
        found = [loc for answer in answers for loc in answer or []]
    except Exception as err:
        return [f"default_locations raised {type(err).__name__}: {err}"]
    return [f"default_locations gave {loc!r:.80}, not a Location(harness, path, names)" for loc in found
            if not (isinstance(loc, Location) and isinstance(loc.harness, str) and isinstance(loc.path, Path)
                    and isinstance(loc.names, tuple) and all(isinstance(n, str) and n for n in loc.names))]


def _check_template(plugin: Any) -> list[str]:
    """What is wrong with the plugin's ``harness_plugin_template`` answers, for each harness it names."""
    import json
    import os

    host = make_host([plugin])
    if not host.pm.hook.harness_plugin_template.get_hookimpls():
        return []
    try:
        harnesses = sorted({loc.harness for answer in host.pm.hook.default_locations() for loc in answer or []
                            if isinstance(loc, Location)})
    except Exception:
        return []  # said by _check_locations
    problems = []
    for harness in harnesses:
        try:
            got = host.pm.hook.harness_plugin_template(harness=harness)
        except Exception as err:
            problems.append(f"harness_plugin_template({harness!r}) raised {type(err).__name__}: {err}")
            continue
        if got is None:
            continue
        if not isinstance(got, Path) or not got.is_dir():
            problems.append(f"harness_plugin_template({harness!r}) gave {got!r:.80}, not a folder")
            continue
        launcher, hooks = got / "bin" / "rematch-hook", got / "hooks" / "hooks.json"
        if not (launcher.is_file() and os.access(launcher, os.X_OK)):
            problems.append(f"harness_plugin_template({harness!r}): {launcher} is not an executable file")
        try:
            if not isinstance(json.loads(hooks.read_text()), dict):
                problems.append(f"harness_plugin_template({harness!r}): {hooks} is not a JSON object")
        except (OSError, ValueError) as err:
            problems.append(f"harness_plugin_template({harness!r}): {hooks}: {err}")
        if (got / "bin" / "rematch_hook.py").exists():
            problems.append(f"harness_plugin_template({harness!r}): holds bin/rematch_hook.py; the core supplies it")
    return problems


def _check_members(plugin: Any, path: Path) -> list[str]:
    """What is wrong with the plugin's ``source_members`` answer for a fixture (``None`` or paths)."""
    host = make_host([plugin])
    if not host.pm.hook.source_members.get_hookimpls():
        return []
    try:
        answer = host.pm.hook.source_members(path=path)
        found = None if answer is None else list(answer)
    except Exception as err:
        return [f"{path}: source_members raised {type(err).__name__}: {err}"]
    return [f"{path}: source_members gave {m!r:.80}, not a Path" for m in found or [] if not isinstance(m, Path)]


def hold_service_lock(run: Path) -> int:
    """Take the service's lock on ``run/serve.lock`` for a test's stand-in service, as ``rematch serve`` does.

    Clients believe only the process that holds it (``live/service_identity.py``): a stand-in that
    answers on the socket must hold it too. Returns the descriptor to close when the stand-in stops.
    """
    import fcntl
    import os

    fd = os.open(run / "serve.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd
