"""Hook contract: every hook documented with its exact signature, and tested."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest

from rematch_trace import hookimpl
from rematch_trace.host import hookspecs
from rematch_trace.host.facade import Host, PluginFailure
from rematch_trace.host.source import Location, Problem, RawRecord, Source
from rematch_trace.host.vocab import Instructions, Neutral, Session, UserMessage
from rematch_trace.importing.source_import import import_source
from rematch_trace.place.identity import Place
from rematch_trace.store.datafolder import DataDir
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
    def read_transcript(self, source: Source, start: int) -> Iterator[RawRecord | Problem]:
        from rematch_trace.importing.reader import read_source

        return read_source(source, start)

    @hookimpl
    def to_trace_records(self, source: Source, records: Iterator[RawRecord], state: dict[str, Any]) -> Iterator[Neutral]:
        # No "is this source mine?" guard: the core asks only the plugin that claimed it.
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


class Intruder:
    """A plugin that answers every per-source hook for every source, were it asked."""

    __name__ = "Intruder"

    def __init__(self) -> None:
        self.asked: list[str] = []

    @hookimpl
    def read_transcript(self, source: Source) -> Iterator[RawRecord | Problem]:
        self.asked.append("read_transcript")
        return iter(())

    @hookimpl
    def visible_entries(self, text: str) -> list[str]:
        self.asked.append("visible_entries")
        return ["intruded"]

    @hookimpl
    def classify_action(self, tool: str) -> str:
        self.asked.append("classify_action")
        return "network"


def test_hook_visible_entries(tmp_path: Path) -> None:
    class LineOffers(LinePlugin):
        __name__ = "LineOffers"

        @hookimpl
        def visible_entries(self, text: str) -> list[str]:
            return [w[1:] for w in text.split() if w.startswith("+")]

    class AddsOne:
        __name__ = "AddsOne"

        @hookimpl(wrapper=True)
        def visible_entries(self, text: str) -> Iterator[None]:
            answers = yield
            return [*answers, ["from-wrapper"]]

    p = write(tmp_path, "s3.line.jsonl", '{"who": "sys", "text": "+deploy +review"}', '{"text": "go"}')
    intruder = Intruder()
    [s] = synthesize_file(p, [LineOffers(), intruder], events=False, redact=False)
    # Only the claiming plugin is asked; another plugin's answer would be a wrong entry.
    assert s.records[0]["visible_entries"] == ["deploy", "review"]
    assert intruder.asked == []
    [s] = synthesize_file(p, [LineOffers(), AddsOne()], events=False, redact=False)
    assert s.records[0]["visible_entries"] == ["deploy", "from-wrapper", "review"]


def test_hook_classify_action(tmp_path: Path) -> None:
    class LineActions(LinePlugin):
        __name__ = "LineActions"

        @hookimpl
        def classify_action(self, tool: str) -> str | None:
            return "shell_exec" if tool == "run" else None

    intruder = Intruder()
    host = make_host([LineActions(), intruder])
    source = host.detect(write(tmp_path, "a.line.jsonl", "{}"), None)
    assert source is not None and source.plugin == "LineActions"
    assert host.action_type(source, "run", {}) == "shell_exec"
    # The claiming plugin's None is "other", not a question for the next plugin.
    assert host.action_type(source, "fetch", {}) == "other"
    assert intruder.asked == []
    # A source no plugin claimed (made by hand) is asked of every plugin.
    assert host.action_type(Source("other", Path("x")), "run", {}) == "network"


def test_hook_conversation_items(tmp_path: Path) -> None:
    """Asked of the claiming plugin only, through pm.hook; optional: a plugin without it gives None."""
    from rematch_trace.host.conversation import Said

    class LineTalk(LinePlugin):
        __name__ = "LineTalk"

        @hookimpl
        def conversation_items(self, source: Source, records: Iterator[RawRecord]) -> Iterator[Any]:
            yield Session("", 1, source.path.name.split(".")[0])
            for r in records:
                yield Said("", 2, "assistant" if r.value.get("who") == "bot" else "user", str(r.value.get("text")))

    class Talker(Intruder):
        __name__ = "Talker"

        @hookimpl
        def conversation_items(self, records: Iterator[RawRecord]) -> Iterator[Any]:
            self.asked.append("conversation_items")
            return iter([Said("", 0, "user", "intruded")])

    talker = Talker()
    host = make_host([LineTalk(), talker])
    p = write(tmp_path, "s1.line.jsonl", '{"who": "me", "text": "hi"}', '{"who": "bot", "text": "hello"}')
    source = host.detect(p, None)
    assert source is not None and source.plugin == "LineTalk"
    items = host.conversation(source, (r for r in host.read(source, 0) if isinstance(r, RawRecord)))
    assert items is not None
    assert [(type(i).__name__, getattr(i, "text", None)) for i in items] == [
        ("Session", None), ("Said", "hi"), ("Said", "hello")]
    assert talker.asked == []
    # The plain LinePlugin does not implement it: no conversation, no other plugin asked in its place.
    host = make_host([LinePlugin(), talker])
    source = host.detect(p, None)
    assert source is not None
    assert host.conversation(source, iter(())) is None and talker.asked == []


def test_a_plain_route_is_monitored_once_monitoring_starts(tmp_path: Path) -> None:
    """One plain implementation is called directly, but never past a monitor added later."""

    class LineActions(LinePlugin):
        __name__ = "LineActions"

        @hookimpl
        def classify_action(self, tool: str) -> str | None:
            if tool == "boom":
                raise RuntimeError("no")
            return "shell_exec" if tool == "run" else None

    host = make_host([LineActions()])
    source = host.detect(write(tmp_path, "m.line.jsonl", "{}"), None)
    assert source is not None
    assert host.action_type(source, "run", {}) == "shell_exec"  # the route is made, unmonitored
    with pytest.raises(PluginFailure, match="LineActions"):
        host.action_type(source, "boom", {})
    calls: list[str] = []
    undo = host.pm.add_hookcall_monitoring(lambda name, impls, kwargs: calls.append(name),
                                           lambda outcome, name, impls, kwargs: None)
    assert host.action_type(source, "run", {}) == "shell_exec"
    assert calls == ["classify_action"]
    undo()
    assert host.action_type(source, "fetch", {}) == "other"
    assert calls == ["classify_action"]


def test_sources_go_to_their_own_plugin_only(tmp_path: Path) -> None:
    class Second(LinePlugin):
        """A second harness, also unguarded: claims *.two.jsonl and marks its sessions."""

        __name__ = "Second"

        @hookimpl
        def detect_source(self, path: Path) -> Source | None:
            return Source("two", path) if path.name.endswith(".two.jsonl") else None

        @hookimpl
        def to_trace_records(self, source: Source, records: Iterator[RawRecord]) -> Iterator[Neutral]:
            yield Session("", 1, "second-" + source.path.name.split(".")[0], cwd="/")
            for r in records:
                yield UserMessage("", 2, "two: " + str(r.value.get("text", "")))

    one = write(tmp_path, "a.line.jsonl", '{"text": "hello"}')
    two = write(tmp_path, "b.two.jsonl", '{"text": "hello"}')
    plugins = [LinePlugin(), Second()]
    [s1] = synthesize_file(one, plugins, events=False, redact=False)
    [s2] = synthesize_file(two, plugins, events=False, redact=False)
    assert s1.session_id == "a" and s1.records[0]["agent"]["name"] == "line"
    assert s2.session_id == "second-b" and s2.records[0]["agent"]["name"] == "two"
    assert [r["text"] for r in s2.records if r["ev"] == "input"] == ["two: hello"]


def test_tryfirst_plugin_claims_before_the_others(tmp_path: Path) -> None:
    class Early(LinePlugin):
        __name__ = "Early"

        @hookimpl(tryfirst=True)
        def detect_source(self, path: Path) -> Source | None:
            return Source("early", path) if path.name.endswith(".line.jsonl") else None

    p = write(tmp_path, "c.line.jsonl", '{"text": "hi"}')
    # Registered first, so pluggy would call it last but for tryfirst.
    host = make_host([Early(), LinePlugin()])
    source = host.detect(p, None)
    assert source is not None and (source.harness, source.plugin) == ("early", "Early")


def test_wrapper_observes_and_changes_detect_source(tmp_path: Path) -> None:
    seen: list[Any] = []

    class Rename:
        __name__ = "Rename"

        @hookimpl(wrapper=True)
        def detect_source(self, path: Path) -> Iterator[None]:
            result = yield
            seen.append(result)
            return attrs.evolve(result, harness="line-wrapped") if isinstance(result, Source) else result

    p = write(tmp_path, "d.line.jsonl", '{"text": "hi"}')
    host = make_host([LinePlugin(), Rename()])
    source = host.detect(p, None)
    assert seen == [Source("line", p)]
    # Changed by the wrapper, and still read by the plugin that claimed it.
    assert source is not None and (source.harness, source.plugin) == ("line-wrapped", "LinePlugin")
    [s] = synthesize_file(p, [LinePlugin(), Rename()], events=False, redact=False)
    assert s.records[0]["agent"]["name"] == "line-wrapped" and s.session_id == "d"


def test_hookcall_monitoring_sees_every_call(tmp_path: Path) -> None:
    calls: list[tuple[str, list[str]]] = []
    host = make_host([LinePlugin()])
    host.pm.add_hookcall_monitoring(
        lambda name, impls, kwargs: calls.append((name, [i.plugin_name for i in impls])),
        lambda outcome, name, impls, kwargs: None,
    )
    p = write(tmp_path, "e.line.jsonl", '{"text": "hi"}')
    source = host.detect(p, None)
    assert source is not None
    list(host.read(source, 0))
    assert ("detect_source", ["LinePlugin"]) in calls
    assert ("read_transcript", ["LinePlugin"]) in calls


def test_tracing_prints_the_hook_calls(tmp_path: Path) -> None:
    env = {**os.environ, "REMATCH_LOAD_PLUGINS": "toy", "REMATCH_TRACE_PLUGINS": "1"}
    res = subprocess.run([sys.executable, "-m", "rematch_trace.cli", "import", str(ROOT / "examples" / "transcripts" / "toy"),
                          "--out", str(tmp_path / "d"), "-j1"], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    lines = res.stderr.splitlines()
    assert any(line.startswith("rematch: detect_source(path, head, hint) -> [") and "toy" in line for line in lines)
    assert "rematch: to_trace_records(source, records, state) -> [toy]" in lines
    assert "rematch: classify_action returned 'shell_exec'" in lines


def test_hook_live_records(tmp_path: Path) -> None:
    from rematch_trace.host.vocab import RunEnd, SessionEnded, ToolResult, ToolStarted
    from rematch_trace.live.capture import capture_event
    from rematch_trace.store.datafolder import DataDir

    class Live:
        __name__ = "Live"

        @hookimpl
        def live_records(self, harness: str, event: dict[str, Any], t: int) -> list[Neutral] | None:
            if harness != "line":
                return None
            out: list[Neutral] = [Session("", t, str(event["sid"]), "/")]
            if "say" in event:
                out.append(UserMessage("", t, str(event["say"]), source="typed"))
            if "run" in event:
                from rematch_trace.host.vocab import ToolCall

                out.append(ToolStarted("", t, ToolCall("c1", "run", {"cmd": event["run"]})))
                out.append(ToolResult("", t + 1, "c1", 2, "ok", False))
                out.append(RunEnd("", t + 2))
            if "end" in event:
                out.append(SessionEnded("", t))
            return out

    host = make_host([Live()])
    data = DataDir(tmp_path / "data")
    assert host.live("other", {"sid": "x"}, 1) == []
    capture_event(host, data, "line", {"sid": "L1", "say": "hello"}, 10)
    capture_event(host, data, "line", {"sid": "L1", "run": "ls"}, 20)
    capture_event(host, data, "line", {"sid": "L1", "say": "no, stop"}, 30)
    capture_event(host, data, "line", {"sid": "L1", "end": True}, 40)
    records = [orjson.loads(x) for x in data.trace_path("L1").read_bytes().splitlines()]
    assert [r["ev"] for r in records] == [
        "session_start", "input", "tool_result", "agent_end", "input", "agent_end", "session_shutdown"
    ]
    assert records[0]["mode"] == "live" and records[1]["source"] == "typed"
    result = next(r for r in records if r["ev"] == "tool_result")
    assert result["tool"] == "run" and result["input"] == {"cmd": "ls"}
    assert [r["prelabel"] for r in records if r["ev"] == "input"] == ["none", "negation"]


def test_plugin_failure_names_plugin(tmp_path: Path) -> None:
    """A plugin that raises mid-file: named with the line, the file's old output kept, the host still usable."""
    host: Host = make_host([LinePlugin()])
    data = DataDir(tmp_path / "data")
    data.ensure()
    p = write(tmp_path, "s4.line.jsonl", '{"text": "a"}')
    source = host.detect(p, None)
    assert source is not None
    import_source(host, source, data)
    before = data.trace_path("s4").read_bytes()
    with open(p, "a") as f:
        f.write('{"text": "b"}\n{"boom": true}\n')
    with pytest.raises(PluginFailure) as err:
        import_source(host, source, data)
    assert (err.value.plugin, err.value.hook) == ("LinePlugin", "to_trace_records")
    assert "at line 3" in str(err.value) and "RuntimeError: boom" in str(err.value)
    assert data.trace_path("s4").read_bytes() == before  # never half a new trace
    assert sorted(x.name for x in data.traces.iterdir()) == ["s4.jsonl"]  # nor a stray temporary
    other = host.detect(write(tmp_path, "s5.line.jsonl", '{"text": "fine"}'), None)
    assert other is not None and [s.session_id for s in import_source(host, other, data).sessions] == ["s5"]


def test_built_in_plugins_get_only_their_own_sources() -> None:
    """With every harness plugin registered (none guards its hooks), each file goes to its claimer only."""
    import rematch_claude_code
    import rematch_codex
    import rematch_omp
    import rematch_toy

    host = make_host([rematch_claude_code, rematch_codex, rematch_omp, rematch_toy])
    calls: list[tuple[str, list[str]]] = []
    host.pm.add_hookcall_monitoring(
        lambda name, impls, kwargs: calls.append((name, [i.plugin_name for i in impls])),
        lambda outcome, name, impls, kwargs: None,
    )
    examples = ROOT / "examples" / "transcripts"
    files = sorted(p for p in examples.rglob("*.jsonl"))
    claimed = {}
    for path in files:
        source = host.detect(path, None)
        assert source is not None, path
        claimed[source.harness] = source.plugin
        calls.clear()
        for _ in host.read(source, 0):
            pass
        assert calls == [("read_transcript", [source.plugin])]
    assert claimed == {"claude_code": "rematch_claude_code", "codex": "rematch_codex", "omp": "rematch_omp",
                       "toy": "rematch_toy"}


def test_hook_hook_denial() -> None:
    """The harness's own deny output, asked of the plugin that owns the harness (no guard in it)."""
    import rematch_claude_code
    import rematch_codex

    class Quiet:
        __name__ = "Quiet"

        @hookimpl
        def hook_denial(self, harness: str, verdict: dict[str, Any]) -> bytes | None:
            return b"line says no\n" if harness == "line" else None

    host = make_host([Quiet(), rematch_claude_code, rematch_codex])
    verdict = {"decision": "deny", "reason": "policy:write-outside-repository", "explanation": "outside the repo",
               "incident_id": "inc-7"}
    assert host.denial("line", verdict) == b"line says no\n"
    expected = {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny",
        "permissionDecisionReason": "rematch: outside the repo (policy:write-outside-repository, incident inc-7)"}}
    for harness in ("claude_code", "codex"):
        answer = host.denial(harness, verdict)
        assert answer is not None and orjson.loads(answer) == expected, harness
    assert host.denial("omp", verdict) is None


def test_hook_harness_plugin_template(tmp_path: Path) -> None:
    """A harness's plugin-folder template, asked of the plugin that owns the harness alone: the Claude
    Code and Codex plugins give theirs; a folder that is not there is none; a plugin raising is named."""
    import rematch_claude_code
    import rematch_codex
    import rematch_omp

    asked: list[str] = []

    class Line:
        __name__ = "Line"

        @hookimpl
        def default_locations(self) -> list[Location]:
            return [Location("line", tmp_path / "nowhere")]

        @hookimpl
        def harness_plugin_template(self, harness: str) -> Path:
            asked.append(harness)
            return tmp_path / "template"  # not made yet

    host = make_host([Line(), rematch_claude_code, rematch_codex, rematch_omp])
    assert host.plugin_template("line") is None  # a folder that is not there is no template
    (tmp_path / "template").mkdir()
    assert host.plugin_template("line") == tmp_path / "template"
    for harness, package, name in (("claude_code", rematch_claude_code, "claude_plugin"),
                                   ("codex", rematch_codex, "codex_plugin")):
        template = host.plugin_template(harness)
        assert template == Path(package.__file__).resolve().parent / name
        assert (template / "bin" / "rematch-hook").is_file() and (template / "hooks" / "hooks.json").is_file()
    assert host.plugin_template("omp") is None  # omp takes an extension, not a plugin folder
    assert asked == ["line", "line"]  # never asked about another plugin's harness

    class Broken(Line):
        __name__ = "Broken"

        @hookimpl
        def harness_plugin_template(self, harness: str) -> Path:
            raise RuntimeError("no template today")

    with pytest.raises(PluginFailure, match=r"Broken.*harness_plugin_template.*no template today"):
        make_host([Broken()]).plugin_template("line")


def test_live_hooks_go_to_the_plugin_that_owns_the_harness() -> None:
    """With every harness plugin registered (none guards its live hooks), each payload reaches its owner only."""
    import rematch_claude_code
    import rematch_codex
    import rematch_omp

    host = make_host([rematch_claude_code, rematch_codex, rematch_omp])
    calls: list[tuple[str, list[str]]] = []
    host.pm.add_hookcall_monitoring(
        lambda name, impls, kwargs: calls.append((name, [i.plugin_name for i in impls])),
        lambda outcome, name, impls, kwargs: None,
    )
    event = {"session_id": "s-1", "cwd": "/", "hook_event_name": "SessionStart"}
    for harness, plugin in (("codex", "rematch_codex"), ("claude_code", "rematch_claude_code")):
        calls.clear()
        [session] = host.live(harness, event, 1)
        assert isinstance(session, Session) and session.session_id == "s-1"
        assert [c for c in calls if c[0] == "live_records"] == [("live_records", [plugin])], harness
    assert host.live("omp", event, 1) == []  # omp has no live hooks: nobody else answers for it


class DocPlugin:
    """A harness writing ``.doc.json`` documents: it names the ending and claims its own files."""

    __name__ = "DocPlugin"

    @hookimpl
    def transcript_suffixes(self) -> list[str]:
        return [".json", "no-dot"]

    @hookimpl
    def detect_source(self, path: Path, head: bytes) -> Source | None:
        return Source("doc", path) if path.name.endswith(".doc.json") else None


def test_hook_transcript_suffixes_adds_endings_and_passes_unclaimed_over(tmp_path: Path) -> None:
    """Files of a named ending reach the import when claimed; an unclaimed one is not found at all
    (not reported skipped); without the plugin no ``.json`` is looked at; an ending without a dot is ignored."""
    from rematch_trace.importing.discovery import discover

    (tmp_path / "a.doc.json").write_text("{}")
    (tmp_path / "settings.json").write_text("{}")
    (tmp_path / "b.jsonl").write_text("{}\n")
    (tmp_path / "x.no-dot").write_text("{}")
    host = make_host([DocPlugin()])
    assert host.suffixes()[-1] == ".json" and "no-dot" not in host.suffixes()
    found = sorted(os.path.basename(p) for p, _ in discover(host, [tmp_path]))
    assert found == ["a.doc.json", "b.jsonl"]
    assert sorted(os.path.basename(p) for p, _ in discover(make_host([]), [tmp_path])) == ["b.jsonl"]


class BundlePlugin:
    """An inline harness whose session is many files: ``x.bundle`` names it, ``x.d/*.json`` hold its prompts.

    The cursor it gives (``RawRecord.end``) is the count of prompt files read; it records every ``start``.
    """

    __name__ = "BundlePlugin"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.starts: list[int] = []

    @hookimpl
    def default_locations(self) -> list[Location]:
        return [Location("bundle", self.root, ("*.bundle",))]

    @hookimpl
    def detect_source(self, path: Path, head: bytes) -> Source | None:
        return Source("bundle", path) if path.suffix == ".bundle" and head.startswith(b"bundle") else None

    @hookimpl
    def source_members(self, path: Path) -> list[Path] | None:
        if path.suffix != ".bundle":
            return None
        folder = path.with_suffix(".d")
        return [folder, *sorted(folder.glob("*.json"))]

    @hookimpl
    def member_source(self, path: Path) -> Path | None:
        return path.parent.with_suffix(".bundle") if path.parent.suffix == ".d" else None

    @hookimpl
    def read_transcript(self, source: Source, start: int) -> Iterator[RawRecord | Problem]:
        self.starts.append(start)
        files = sorted(source.path.with_suffix(".d").glob("*.json"))
        for i, f in enumerate(files[start:], start=start):
            yield RawRecord(i + 1, i, i + 1, orjson.loads(f.read_bytes()))

    @hookimpl
    def to_trace_records(self, source: Source, records: Iterator[RawRecord], state: dict[str, Any]) -> Iterator[Neutral]:
        if not state.get("opened"):
            state["opened"] = True
            yield Session("", 1, source.path.stem, cwd="/")
        for r in records:
            yield UserMessage("", 2 + r.line, r.value["text"])


def _bundle(tmp_path: Path, n: int) -> Path:
    src = tmp_path / "logs" / "s1.bundle"
    (tmp_path / "logs" / "s1.d").mkdir(parents=True, exist_ok=True)
    src.write_bytes(b"bundle v1\n")
    for i in range(n):
        (tmp_path / "logs" / "s1.d" / f"{i:03d}.json").write_bytes(orjson.dumps({"text": f"prompt {i}"}))
    for p in [src, src.with_suffix(".d"), *src.with_suffix(".d").iterdir()]:
        os.utime(p, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))  # long before the import
    return src


def test_hook_source_members_continues_a_source_of_many_files(tmp_path: Path) -> None:
    """A source found by ``Location.names`` whose content is its member files: imported, then found
    unchanged while no member changed (the ``.bundle`` itself never does), then continued from the
    plugin's cursor (``start`` = the last record's ``end``) when a member file is added."""
    from rematch_trace.importing.batch import run_import
    from rematch_trace.importing.settings import ImportSettings

    src = _bundle(tmp_path, 2)
    plugin = BundlePlugin(tmp_path / "logs")
    host = make_host([plugin])
    data = DataDir(tmp_path / "out")
    first = run_import([tmp_path / "logs"], data, ImportSettings(events=False), host=host)
    assert first.count("imported") == 1 and plugin.starts == [0]
    again = run_import([tmp_path / "logs"], data, ImportSettings(events=False), host=host)
    assert again.count("unchanged") == 1 and plugin.starts == [0]
    (src.with_suffix(".d") / "002.json").write_bytes(orjson.dumps({"text": "prompt 2"}))
    grown = run_import([tmp_path / "logs"], data, ImportSettings(events=False), host=host)
    assert grown.count("resumed") == 1 and plugin.starts == [0, 2]
    trace = [orjson.loads(line) for line in data.trace_path("s1").read_bytes().splitlines()]
    assert [r["text"] for r in trace if r["ev"] == "input"] == ["prompt 0", "prompt 1", "prompt 2"]
    assert [r["seq"] for r in trace] == list(range(len(trace)))


def test_hook_member_source_maps_a_changed_member_to_its_source(tmp_path: Path) -> None:
    """``rematch watch``'s burst of changes: a member file written is its source's import; a file no
    plugin owns is nothing."""
    from rematch_trace.watch.changed import files_of, wanted
    from rematch_trace.watch.roots import Roots

    src = _bundle(tmp_path, 1)
    host = make_host([BundlePlugin(tmp_path / "logs")])
    roots = Roots.of(host, [tmp_path / "logs"])
    member = src.with_suffix(".d") / "000.json"
    (tmp_path / "logs" / "notes.txt").write_text("x")
    found = files_of([(2, str(member)), (2, str(tmp_path / "logs" / "notes.txt"))], roots, str(tmp_path / "out"), 3,
                     host)
    assert found == [(str(src), None)]
    assert wanted(str(tmp_path / "out"), any_file=True)(2, str(member))
    assert not wanted(str(tmp_path / "out"))(2, str(member))
