"""The plugin author's side: the walk-through's code runs as written, and the contract kit catches what it says."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomllib

import rematch_toy
from rematch_trace import hookimpl
from rematch_trace.host.facade import PluginFailure
from rematch_trace.host.source import RawRecord, Source
from rematch_trace.host.vocab import Neutral, Session, UserMessage
from rematch_trace.testing import ContractError, check_plugin, synthesize_file
from rematch_trace.testing import _schema_validator as schema_validator

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "writing-a-plugin.md"
TOY = ROOT / "examples" / "transcripts" / "toy" / "demo.jsonl"

FIXTURE = "".join(json.dumps(line) + "\n" for line in [
    {"myharness_version": 1, "session": "mh-1", "cwd": "/tmp/mh", "t": "2026-05-04T10:00:00.000Z"},
    {"t": "2026-05-04T10:00:01.000Z", "user": "list the files"},
    {"t": "2026-05-04T10:00:02.000Z", "model": "m1", "say": "running ls",
     "calls": [{"id": "c1", "tool": "run", "args": {"cmd": "ls"}}]},
    {"t": "2026-05-04T10:00:03.000Z", "result": "c1", "output": "a\nb\n", "error": False},
    {"t": "2026-05-04T10:00:04.500Z", "user": "no, stop"},
])


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```$", GUIDE.read_text(), re.S | re.M)


@pytest.fixture
def guide_plugin(tmp_path: Path) -> Iterator[tuple[Path, Any]]:
    """Steps 2 to 5 of the guide, one after the other, as ``rematch_myharness``, installed from step 1."""
    code = _blocks("python")
    assert len(code) == 5, "steps 2-5 and the test of step 6"
    site = tmp_path / "site"
    pkg = site / "rematch_myharness"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("\n\n".join(code[:4]))
    [toml] = _blocks("toml")
    project = tomllib.loads(toml)["project"]
    info = site / f"rematch_myharness-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    eps = "".join(f"{k} = {v}\n" for k, v in project["entry-points"]["rematch"].items())
    (info / "entry_points.txt").write_text(f"[rematch]\n{eps}")
    sys.path.insert(0, str(site))
    try:
        yield site, importlib.import_module("rematch_myharness")
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("rematch_myharness", None)


def test_the_guides_pyproject_is_installable() -> None:
    [toml] = _blocks("toml")
    data = tomllib.loads(toml)
    assert {"name", "version", "dependencies"} <= set(data["project"])  # pip refuses a project without version
    assert data["project"]["entry-points"]["rematch"] == {"myharness": "rematch_myharness"}


def test_the_guides_code_is_a_working_plugin(tmp_path: Path, guide_plugin: tuple[Path, Any],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _site, plugin = guide_plugin
    (tmp_path / "tests" / "fixtures").mkdir(parents=True)
    (tmp_path / "tests" / "fixtures" / "one.jsonl").write_text(FIXTURE)
    monkeypatch.chdir(tmp_path)
    step6: dict[str, Any] = {}
    exec(_blocks("python")[4], step6)  # the guide's own contract test, as written
    out = tmp_path / "out"
    out.mkdir()
    step6["test_contract"](out)
    [session] = check_plugin(plugin, ["tests/fixtures/one.jsonl"])
    evs = [r["ev"] for r in session.records]
    assert evs[0] == "session_start" and "tool_result" in evs and evs[-1] == "session_shutdown"
    assert session.records[0]["cwd"] == "/tmp/mh"
    assert [r["prelabel"] for r in session.records if r["ev"] == "input"] == ["none", "negation"]
    assert {e["action_type"] for e in session.events if e["kind"] == "pre_tool_use"} == {"shell_exec"}


def test_the_guides_plugin_imports_through_the_real_command(tmp_path: Path, guide_plugin: tuple[Path, Any]) -> None:
    site, _plugin = guide_plugin
    fixture = tmp_path / "one.jsonl"
    fixture.write_text(FIXTURE)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REMATCH_", "PYTEST_"))}
    env.update({"PYTHONPATH": str(site), "REMATCH_LOAD_PLUGINS": "myharness"})
    res = subprocess.run([sys.executable, "-m", "rematch_trace.cli", "import", str(fixture), "--out",
                          str(tmp_path / "d"), "--json", "-j", "1"], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["sessions_imported"] == 1
    trace = [json.loads(line) for line in (tmp_path / "d" / "traces" / "mh-1.jsonl").read_text().splitlines()]
    assert trace[0]["agent"]["name"] == "myharness"
    # t is unix milliseconds: the 1.5 s between the tool result and the last input show as 1500.
    inputs = [r for r in trace if r["ev"] == "input"]
    assert inputs[1]["t"] - inputs[0]["t"] == 3500


def test_check_plugin_refuses_to_run_without_jsonschema(monkeypatch: pytest.MonkeyPatch) -> None:
    schema_validator.cache_clear()
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # as if not installed
    try:
        with pytest.raises(ImportError, match=r"pip install '\./\[testing\]' from rematch's checkout"):
            check_plugin(rematch_toy, [TOY])
    finally:
        schema_validator.cache_clear()


class _Toy:
    """The example plugin's hooks, with one of them replaced by a test."""

    __name__ = "ToyVariant"
    detect_source = staticmethod(rematch_toy.detect_source)
    read_transcript = staticmethod(rematch_toy.read_transcript)
    to_trace_records = staticmethod(rematch_toy.to_trace_records)
    classify_action = staticmethod(rematch_toy.classify_action)


def test_check_plugin_exercises_default_locations() -> None:
    class Raises(_Toy):
        @hookimpl
        def default_locations(self) -> list[Any]:
            raise OSError("no home folder")

    class NotLocations(_Toy):
        @hookimpl
        def default_locations(self) -> list[Any]:
            return ["/home/me/.toy"]

    with pytest.raises(ContractError, match="default_locations raised OSError: no home folder"):
        check_plugin(Raises(), [TOY])
    with pytest.raises(ContractError, match=r"default_locations gave '/home/me/.toy', not a Location"):
        check_plugin(NotLocations(), [TOY])
    assert check_plugin(rematch_toy, [TOY])  # the example's own answer passes



def test_check_plugin_exercises_source_members_and_location_names() -> None:
    """A ``source_members`` answer of strings, and a ``Location.names`` that is no tuple of patterns,
    break the contract (the core stats members as paths and fnmatches names)."""
    from rematch_trace.host.source import Location

    class StrMembers(_Toy):
        @hookimpl
        def source_members(self, path: Path) -> list[Any]:
            return [str(path) + "-wal"]

    class BadNames(_Toy):
        @hookimpl
        def default_locations(self) -> list[Any]:
            return [Location("toy", Path("/nowhere"), "*.db")]  # type: ignore[arg-type]

    with pytest.raises(ContractError, match=r"source_members gave '.*-wal', not a Path"):
        check_plugin(StrMembers(), [TOY])
    with pytest.raises(ContractError, match=r"default_locations gave .*not a Location\(harness, path, names\)"):
        check_plugin(BadNames(), [TOY])

class WrongCwd(_Toy):
    @hookimpl
    def to_trace_records(self, records: Iterator[RawRecord]) -> Iterator[Neutral]:
        for r in records:
            if "toy" in r.value:
                yield Session("", 1, "s-wrong", cwd=r.value.get("cwd"))  # type: ignore[arg-type]
            else:
                yield UserMessage("", 2, "hi")


def test_a_wrong_typed_cwd_is_blamed_on_the_plugin_that_gave_it(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"toy": 1, "session": "s", "cwd": 42}\n{"t": 1, "user": "hi"}\n')
    with pytest.raises(ContractError) as err:
        check_plugin(WrongCwd(), [bad])
    text = str(err.value)
    assert "plugin 'ToyVariant' failed in to_trace_records at line 1" in text
    assert "Session.cwd is int 42, not str" in text and "default_plugins.place" not in text
    # Without the kit's type checks, the core itself still names the plugin, not the place plugin.
    with pytest.raises(PluginFailure) as core_err:
        synthesize_file(bad, [WrongCwd()])
    assert core_err.value.plugin == "ToyVariant" and "Session.cwd" in str(core_err.value)


def test_a_plugin_exception_in_translation_names_the_line(tmp_path: Path) -> None:
    class Fails(_Toy):
        @hookimpl
        def to_trace_records(self, source: Source, records: Iterator[RawRecord]) -> Iterator[Neutral]:
            for r in records:
                if "toy" in r.value:
                    yield Session("", 1, "s-fails", cwd="/")
                elif r.value["user"] == "third":
                    raise KeyError("shape")
                else:
                    yield UserMessage("", 2, r.value["user"])

    f = tmp_path / "f.jsonl"
    f.write_text('{"toy": 1}\n{"user": "second"}\n{"user": "third"}\n')
    with pytest.raises(ContractError, match=r"failed in to_trace_records at line 3: KeyError: 'shape'"):
        check_plugin(Fails(), [f])
