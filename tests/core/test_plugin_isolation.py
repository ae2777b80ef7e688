"""A broken third-party plugin, installed through its entry point, against the real ``rematch`` process.

The plugin lives in a distribution written to a temporary folder on
``PYTHONPATH`` (a ``.dist-info`` with ``entry_points.txt``: how pip installs
one). It raises in the hook ``BROKEN_HOOK`` names; every other plugin's files
must still import, the failure must name the plugin, and the exit status must
not say all is well.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "transcripts"
TOY = EXAMPLES / "toy" / "demo.jsonl"

BROKEN_PLUGIN = '''
"""A third-party harness plugin that raises in the hook $BROKEN_HOOK names."""
import os
from pathlib import Path

from rematch_trace import hookimpl
from rematch_trace.host.source import Location, Source
from rematch_trace.host.vocab import AssistantMessage, Instructions, Session, ToolCall, UserMessage
from rematch_trace.importing.reader import read_source

HOOK = os.environ.get("BROKEN_HOOK", "")


def _maybe(hook):
    if HOOK == hook:
        raise RuntimeError("broken in " + hook)


@hookimpl
def default_locations():
    _maybe("default_locations")
    return [Location("broken", Path(os.environ["BROKEN_HOME"]))]


@hookimpl
def detect_source(path):
    _maybe("detect_source")
    return Source("broken", path) if path.name.endswith(".broken.jsonl") else None


@hookimpl
def identify_place(cwd):
    _maybe("identify_place")


@hookimpl
def read_transcript(source, start):
    _maybe("read_transcript")
    return read_source(source, start)


@hookimpl
def to_trace_records(source, records):
    for r in records:
        _maybe("to_trace_records")
        yield Session("", 1, "broken-" + str(r.value.get("n")), cwd="/")
        yield Instructions("", 1, "the skills")
        yield UserMessage("", 2, "hello")
        yield AssistantMessage("", 3, text="ok", tool_calls=(ToolCall("c1", "sh", {"cmd": "ls"}),))


@hookimpl
def visible_entries(text):
    _maybe("visible_entries")
    return []


@hookimpl
def classify_action(tool):
    _maybe("classify_action")
    return "other"
'''


def _dist(site: Path, module: str, source: str) -> None:
    """Install ``module`` as a distribution with a ``rematch`` entry point, as pip would."""
    (site / f"{module}.py").write_text(source)
    info = site / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[rematch]\n{module.removeprefix('rematch_')} = {module}\n")


@pytest.fixture
def site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    _dist(site, "rematch_broken", BROKEN_PLUGIN)
    _dist(site, "rematch_unloadable", "raise ImportError('a dependency is missing')\n")
    return site


def rematch(site: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("REMATCH_", "PYTEST_"))}
    e.update({"PYTHONPATH": str(site), "REMATCH_LOAD_PLUGINS": "toy,broken", "BROKEN_HOME": "/nonexistent"})
    e.update(env)
    return subprocess.run([sys.executable, "-m", "rematch_trace.cli", *args], capture_output=True, text=True, env=e,
                          timeout=120)


def _sources(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(TOY, src / "demo.jsonl")
    (src / "x.broken.jsonl").write_text('{"n": 1}\n')
    return src


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("hook", ["detect_source", "identify_place"])
def test_a_plugin_failing_in_a_hook_every_file_meets_is_left_out(tmp_path: Path, site: Path, hook: str,
                                                                  jobs: str) -> None:
    res = rematch(site, "import", str(_sources(tmp_path)), "--out", str(tmp_path / "d"), "--json", "-j", jobs,
                  BROKEN_HOOK=hook)
    report = json.loads(res.stdout)
    assert res.returncode == 1, res.stderr  # not all-clear: a plugin was left out
    assert report["sessions_imported"] >= 1  # the toy session, whatever the broken plugin did
    said = [line for line in res.stderr.splitlines() if f"plugin 'broken' failed in {hook}" in line]
    assert len(said) == 1, res.stderr  # once, whichever process met it
    assert "RuntimeError: broken in " + hook in said[0]
    assert report["plugin_failures"] == [said[0].removeprefix("rematch: ")]
    assert "Traceback" not in res.stderr
    assert (tmp_path / "d" / "traces" / "toy-demo-1.jsonl").exists()


def test_a_plugin_failing_in_default_locations_leaves_the_others_searched(tmp_path: Path, site: Path) -> None:
    home = tmp_path / "home"
    (home / ".toy" / "sessions").mkdir(parents=True)
    shutil.copy(TOY, home / ".toy" / "sessions" / "demo.jsonl")
    res = rematch(site, "import", "--out", str(tmp_path / "d"), "--json", "-j", "1", HOME=str(home),
                  BROKEN_HOOK="default_locations")
    assert res.returncode == 1, res.stderr
    assert json.loads(res.stdout)["sessions_imported"] == 1
    assert "plugin 'broken' failed in default_locations: RuntimeError: broken in default_locations" in res.stderr


@pytest.mark.parametrize("hook", ["read_transcript", "to_trace_records", "visible_entries", "classify_action"])
def test_a_plugin_failing_on_its_own_file_costs_that_file(tmp_path: Path, site: Path, hook: str) -> None:
    src = _sources(tmp_path)
    res = rematch(site, "import", str(src), "--out", str(tmp_path / "d"), "--json", "-j", "1", BROKEN_HOOK=hook)
    report = json.loads(res.stdout)
    assert res.returncode == 1
    assert report["sessions_imported"] == 1 and report["files"]["failed"] == 1
    [failure] = report["failures"]
    assert failure["path"] == str(src / "x.broken.jsonl")
    assert failure["reason"].startswith(f"plugin 'broken' failed in {hook}")
    if hook == "to_trace_records":
        assert f"failed in {hook} at line 1: RuntimeError" in failure["reason"]
    assert not list((tmp_path / "d" / "traces").glob("broken-*"))  # no half a trace


def test_without_a_failure_the_third_party_plugin_imports(tmp_path: Path, site: Path) -> None:
    """The control: the plugin that breaks above works when nothing breaks."""
    res = rematch(site, "import", str(_sources(tmp_path)), "--out", str(tmp_path / "d"), "--json", "-j", "1")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["sessions_imported"] == 2 and "failed" not in res.stderr


@pytest.mark.parametrize("args", [("plugins",), ("import", "-j", "2"), ("import", "-j", "1"), ("audit",),
                                  ("search", "anything"), ("show", "some-session")])
def test_a_plugin_that_fails_to_load_is_said_once(tmp_path: Path, site: Path, args: tuple[str, ...]) -> None:
    if args[0] == "import":
        args = (*args, str(_sources(tmp_path)), "--out", str(tmp_path / "d"))
    elif args[0] == "search":
        # search loads the plugins when its index must read a source (here: an index made anew).
        rematch(site, "import", str(_sources(tmp_path)), "--out", str(tmp_path / "d"), "-j", "1",
                REMATCH_LOAD_PLUGINS="toy")
        (tmp_path / "d" / "search.sqlite").unlink()
        args = (*args, "--out", str(tmp_path / "d"))
    elif args[0] != "plugins":
        args = (*args, "--out", str(tmp_path / "nothing-here"))
    res = rematch(site, *args, REMATCH_LOAD_PLUGINS="toy,broken,unloadable")
    said = [line for line in res.stderr.splitlines() if "plugin 'unloadable' failed to load" in line]
    assert len(said) == 1, res.stderr
    assert "ImportError: a dependency is missing" in said[0]


@pytest.mark.parametrize("command", [("sessions",), ("stats",), ("flagged",), ("search", "failing")])
def test_the_commands_that_read_only_the_data_folder_load_no_plugin(tmp_path: Path, site: Path,
                                                                     command: tuple[str, ...]) -> None:
    # They answer from the ledger's stored summaries (search: from its index, up to date) and call no hook: a
    # plugin that cannot even be imported is not imported (nor said) by them, and their answer is the same
    # (cli/__init__.py, DATA_ONLY and ON_USE).
    data = tmp_path / "d"
    rematch(site, "import", str(_sources(tmp_path)), "--out", str(data), "-j", "1", REMATCH_LOAD_PLUGINS="toy")
    with_broken = rematch(site, *command, "--json", "--out", str(data), REMATCH_LOAD_PLUGINS="toy,broken,unloadable")
    alone = rematch(site, *command, "--json", "--out", str(data), REMATCH_LOAD_PLUGINS="toy")
    assert "failed to load" not in with_broken.stderr and with_broken.returncode == alone.returncode == 0
    assert with_broken.stdout == alone.stdout and json.loads(alone.stdout)


def test_files_of_an_absent_harness_name_the_plugin_to_install(tmp_path: Path, site: Path) -> None:
    res = rematch(site, "import", str(EXAMPLES), "--out", str(tmp_path / "d"), "-j", "1",
                  REMATCH_LOAD_PLUGINS="codex")
    assert "1 sessions imported" in res.stdout  # the Codex rollout
    cc = next((EXAMPLES / "claude_code").rglob("*.jsonl"))
    omp = next((EXAMPLES / "omp").rglob("*.jsonl"))
    assert f"rematch: {cc}: skipped: looks like a transcript of Claude Code, but no installed plugin reads it: " \
           "pip install rematch-claude-code" in res.stderr
    assert f"rematch: {omp}: skipped: looks like a transcript of omp, but no installed plugin reads it: " \
           "pip install rematch-omp" in res.stderr
    # Neither the installed harness nor an unknown one is told to install anything.
    assert "rematch-codex" not in res.stderr
    assert f"rematch: {EXAMPLES / 'toy' / 'demo.jsonl'}: skipped: JSON lines that no installed plugin recognises as a transcript (see: rematch plugins)" in res.stderr


def test_pi_and_omp_files_name_their_own_plugin() -> None:
    """One format, two harnesses: omp's title slot (or its folder) names rematch-omp, else rematch-pi."""
    from rematch_trace.host.known import missing_plugin

    header = b'{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}\n'
    slot = b'{"type":"title","v":1,"title":"","pad":"  "}\n'
    said = {name: missing_plugin(Path(name), head, loaded=()) for name, head in [
        ("/copies/a.jsonl", header), ("/copies/b.jsonl", slot + header),
        ("/home/u/.omp/agent/sessions/--w--/c.jsonl", header), ("/home/u/.pi/agent/sessions/--w--/d.jsonl", header)]}
    assert said["/copies/a.jsonl"] == said["/home/u/.pi/agent/sessions/--w--/d.jsonl"] == \
        "looks like a transcript of pi, but no installed plugin reads it: pip install rematch-pi"
    assert said["/copies/b.jsonl"] == said["/home/u/.omp/agent/sessions/--w--/c.jsonl"] == \
        "looks like a transcript of omp, but no installed plugin reads it: pip install rematch-omp"
    assert missing_plugin(Path("/copies/a.jsonl"), header, loaded=("pi",)) is None


def test_a_copied_transcript_is_known_by_its_first_bytes(tmp_path: Path, site: Path) -> None:
    """Out of its folder and renamed, a Claude Code file still says what it is."""
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(next((EXAMPLES / "claude_code").rglob("*.jsonl")), src / "backup.jsonl")
    res = rematch(site, "import", str(src), "--out", str(tmp_path / "d"), "-j", "1", REMATCH_LOAD_PLUGINS="")
    assert "backup.jsonl: skipped: looks like a transcript of Claude Code" in res.stderr


def test_default_folders_of_absent_harnesses_are_named(tmp_path: Path, site: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude" / "projects").mkdir(parents=True)
    res = rematch(site, "import", "--out", str(tmp_path / "d"), "-j", "1", HOME=str(home),
                  REMATCH_LOAD_PLUGINS="toy")
    assert f"{home / '.claude' / 'projects'} holds Claude Code transcripts, not imported: " \
           "pip install rematch-claude-code" in res.stderr


def test_plugins_shows_default_locations(tmp_path: Path, site: Path) -> None:
    res = rematch(site, "plugins", BROKEN_HOME=str(tmp_path / "bh"))
    assert res.returncode == 0
    assert f"  looks in: {tmp_path / 'bh'}" in res.stdout.splitlines()
    listed = json.loads(rematch(site, "plugins", "--json", BROKEN_HOME=str(tmp_path / "bh")).stdout)
    assert next(p for p in listed if p["name"] == "broken")["locations"] == [str(tmp_path / "bh")]


def test_tracing_shows_the_hook_that_raised(tmp_path: Path, site: Path) -> None:
    res = rematch(site, "import", str(_sources(tmp_path)), "--out", str(tmp_path / "d"), "-j", "1",
                  BROKEN_HOOK="detect_source", REMATCH_TRACE_PLUGINS="1")
    assert "rematch: detect_source raised RuntimeError: broken in detect_source" in res.stderr.splitlines()
    assert "1 sessions imported" in res.stdout and "Traceback" not in res.stderr
