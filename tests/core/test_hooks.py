"""Hook contract: every hook documented with its exact signature, and tested."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rematch_trace import hookimpl
from rematch_trace.host import hookspecs
from rematch_trace.host.facade import Host, PluginFailure
from rematch_trace.host.source import Location, Problem, RawRecord, Source
from rematch_trace.host.vocab import Instructions, Neutral, Session, UserMessage
from rematch_trace.place.identity import Place
from rematch_trace.testing import make_host, synthesize_file

ROOT = Path(__file__).resolve().parents[2]
HOOKS = sorted(name for name, f in vars(hookspecs).items() if inspect.isfunction(f) and hasattr(f, "rematch_spec"))


def test_hooks_exist() -> None:
    assert {"read_transcript", "to_trace_records", "identify_place", "visible_entries"} <= set(HOOKS)


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_documented_with_exact_signature(hook: str) -> None:
    docs = (ROOT / "docs" / "plugins.md").read_text()
    params = ", ".join(inspect.signature(getattr(hookspecs, hook)).parameters)
    assert re.search(rf"^## {re.escape(hook)}\({re.escape(params)}\)$", docs, re.M), f"{hook}({params}) undocumented"


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_has_a_test(hook: str) -> None:
    names = [n for n in globals() if n.startswith("test_hook_")]
    assert any(hook in n for n in names), f"no test_hook_* test names {hook}"


class LinePlugin:
    """An inline harness: each line {"who": ..., "text": ...} of a file ending .line.jsonl."""

    __name__ = "LinePlugin"

    @hookimpl
    def default_locations(self) -> list[Location]:
        return [Location("line", Path("/nonexistent/line"))]

    @hookimpl
    def detect_source(self, path: Path, head: bytes) -> Source | None:
        return Source("line", path) if path.name.endswith(".line.jsonl") and head.startswith(b"{") else None

    @hookimpl
    def read_transcript(self, source: Source, start: int) -> Iterator[RawRecord | Problem] | None:
        if source.harness != "line":
            return None
        from rematch_trace.importing.reader import read_jsonl

        def gen() -> Iterator[RawRecord | Problem]:
            with open(source.path, "rb") as f:
                f.seek(start)
                yield from read_jsonl(f, str(source.path), start)

        return gen()

    @hookimpl
    def to_trace_records(self, source: Source, records: Iterator[RawRecord], state: dict[str, Any]) -> Iterator[Neutral] | None:
        if source.harness != "line":
            return None

        def gen() -> Iterator[Neutral]:
            if not state.get("opened"):
                state["opened"] = True
                yield Session("", 1, source.path.name.split(".")[0], cwd="/")
            for r in records:
                if r.value.get("boom"):
                    raise RuntimeError("boom")
                if r.value.get("who") == "sys":
                    yield Instructions("", 2, r.value.get("text", ""))
                else:
                    yield UserMessage("", 2, str(r.value.get("text", "")))

        return gen()


def write(tmp_path: Path, name: str, *lines: str) -> Path:
    p = tmp_path / name
    p.write_text("".join(line + "\n" for line in lines))
    return p


def test_hook_default_locations() -> None:
    host = make_host([LinePlugin()])
    assert Location("line", Path("/nonexistent/line")) in host.locations()


def test_hook_detect_source(tmp_path: Path) -> None:
    host = make_host([LinePlugin()])
    assert host.detect(write(tmp_path, "a.line.jsonl", "{}"), None) == Source("line", tmp_path / "a.line.jsonl")
    assert host.detect(write(tmp_path, "b.jsonl", "{}"), None) is None


def test_hook_read_transcript_and_to_trace_records(tmp_path: Path) -> None:
    p = write(tmp_path, "s1.line.jsonl", '{"text": "hello"}', "not json", '{"text": "no, stop"}')
    [s] = synthesize_file(p, [LinePlugin()], events=False, redact=False)
    assert [r["prelabel"] for r in s.records if r["ev"] == "input"] == ["none", "negation"]
    [problem] = s.problems
    assert str(problem).startswith(f"{p}:2: invalid JSON")


def test_hook_identify_place(tmp_path: Path) -> None:
    class Places:
        __name__ = "Places"

        @hookimpl
        def identify_place(self, cwd: str) -> Place:
            return Place(repo="/repo", repo_remote="https://example.com/o/r", subpath="x")

    p = write(tmp_path, "s2.line.jsonl", '{"text": "hi"}')
    [s] = synthesize_file(p, [LinePlugin(), Places()], events=False, redact=False)
    assert s.records[0]["repo"] == "/repo" and s.records[0]["subpath"] == "x"


def test_hook_visible_entries(tmp_path: Path) -> None:
    class Offers:
        __name__ = "Offers"

        @hookimpl
        def visible_entries(self, text: str) -> list[str]:
            return [w[1:] for w in text.split() if w.startswith("+")]

    p = write(tmp_path, "s3.line.jsonl", '{"who": "sys", "text": "+deploy +review"}', '{"text": "go"}')
    [s] = synthesize_file(p, [LinePlugin(), Offers()], events=False, redact=False)
    assert s.records[0]["visible_entries"] == ["deploy", "review"]


def test_hook_classify_action() -> None:
    class Actions:
        __name__ = "Actions"

        @hookimpl
        def classify_action(self, source: Source, tool: str) -> str | None:
            return "shell_exec" if source.harness == "line" and tool == "run" else None

    host = make_host([Actions()])
    assert host.action_type(Source("line", Path("x")), "run", {}) == "shell_exec"
    assert host.action_type(Source("other", Path("x")), "run", {}) == "other"


def test_plugin_failure_names_plugin(tmp_path: Path) -> None:
    p = write(tmp_path, "s4.line.jsonl", '{"text": "a"}', '{"boom": true}')
    host: Host = make_host([LinePlugin()])
    with pytest.raises(PluginFailure) as err:
        synthesize_file(p, [LinePlugin()], events=False, redact=False)
    assert err.value.plugin == "LinePlugin" and "boom" in str(err.value)
    assert host is not None
