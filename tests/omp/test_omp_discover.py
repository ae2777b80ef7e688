"""Where omp sessions are found, which files the plugin claims, and tool action types."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from omp_build import header, title_slot, write

import rematch_omp
from rematch_omp.discover import session_roots
from rematch_trace.host.source import Location, Source

HOME = Path("/home/u")


def test_default_roots(tmp_path: Path) -> None:
    roots = session_roots({}, HOME)
    assert roots == [
        HOME / ".omp/agent/sessions",
        HOME / ".omp/agent/archive/sessions",
    ]
    # pi's folder is rematch-pi's (harness pi); the folders both harnesses read from the environment, both name.
    from rematch_pi.discover import session_roots as pi_roots

    assert pi_roots({}, HOME) == [HOME / ".pi/agent/sessions"]
    env = {"PI_CODING_AGENT_DIR": "/data/agent", "PI_CODING_AGENT_SESSION_DIR": "/flat"}
    assert pi_roots(env, HOME) == [Path("/flat"), Path("/data/agent/sessions")]
    assert set(pi_roots(env, HOME)) <= set(session_roots(env, HOME))


def test_config_dir_agent_dir_and_flat_session_dir_overrides() -> None:
    assert session_roots({"PI_CONFIG_DIR": ".omp-dev"}, HOME)[0] == HOME / ".omp-dev/agent/sessions"
    roots = session_roots({"PI_CODING_AGENT_DIR": "/data/agent", "PI_CODING_AGENT_SESSION_DIR": "/flat"}, HOME)
    assert roots[:3] == [Path("/flat"), Path("/data/agent/sessions"), Path("/data/agent/archive/sessions")]
    assert HOME / ".omp/agent/sessions" not in roots


@pytest.mark.parametrize(("env", "profile"), [({"OMP_PROFILE": "work"}, "work"), ({"PI_PROFILE": "old"}, "old"),
                                              ({"OMP_PROFILE": "work", "PI_PROFILE": "old"}, "work")])
def test_profiles(env: dict[str, str], profile: str) -> None:
    roots = session_roots({**env, "PI_CODING_AGENT_DIR": "/ignored/for/profiles"}, HOME)
    assert roots[0] == HOME / ".omp/profiles" / profile / "agent/sessions"
    assert session_roots({"OMP_PROFILE": "default"}, HOME)[0] == HOME / ".omp/agent/sessions"


def test_xdg_data_home_moves_sessions_only_when_omp_lives_there(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    assert session_roots({"XDG_DATA_HOME": str(xdg)}, HOME)[0] == HOME / ".omp/agent/sessions"
    (xdg / "omp").mkdir(parents=True)
    roots = session_roots({"XDG_DATA_HOME": str(xdg)}, HOME)
    assert roots[:2] == [xdg / "omp/sessions", xdg / "omp/archive/sessions"]
    assert HOME / ".omp/agent/sessions" in roots  # sessions written before the move stay importable


def test_default_locations_hook_reads_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(tmp_path / "flat"))
    locs = list(rematch_omp.default_locations())
    assert all(isinstance(loc, Location) and loc.harness == "omp" for loc in locs)
    assert locs[0].path == tmp_path / "flat"


def _head(path: Path) -> bytes:
    return path.read_bytes()[:4096]


def test_claims_omp_and_pi_files_only(tmp_path: Path) -> None:
    import rematch_pi

    omp = write(tmp_path / "a.jsonl", [title_slot(), header()])
    pi = write(tmp_path / "b.jsonl", [header(version=None)])
    claude = write(tmp_path / "c.jsonl", [{"parentUuid": None, "type": "user", "sessionId": "x", "message": {}}])
    codex = write(tmp_path / "d.jsonl", [{"timestamp": "2025", "type": "session_meta", "payload": {"id": "x"}}])
    slot_only = write(tmp_path / "e.jsonl", [title_slot(), {"type": "message"}])
    other_ext = write(tmp_path / "f.json", [header()])
    # Named by path: omp's title slot says omp wrote it; a file without one is pi's.
    assert rematch_omp.detect_source(path=omp, head=_head(omp), hint=None) == Source("omp", omp, mutable_prefix=256)
    assert rematch_pi.detect_source(path=omp, head=_head(omp), hint=None) is None
    assert rematch_omp.detect_source(path=pi, head=_head(pi), hint=None) is None
    assert rematch_pi.detect_source(path=pi, head=_head(pi), hint=None) == Source("pi", pi)
    # Found in a harness's own folders (asked of its plugin alone), a file of the format is that harness's.
    assert rematch_omp.detect_source(path=pi, head=_head(pi), hint="omp") == Source("omp", pi)
    assert rematch_pi.detect_source(path=omp, head=_head(omp), hint="pi") == Source("pi", omp, mutable_prefix=256)
    for path in (claude, codex, slot_only, other_ext):
        assert rematch_omp.detect_source(path=path, head=_head(path), hint=None) is None
        assert rematch_pi.detect_source(path=path, head=_head(path), hint=None) is None
    # A file found in Codex's folders is asked of the Codex plugin alone (the host routes by the hint).
    import rematch_codex
    from rematch_trace.testing import make_host

    host = make_host([rematch_omp, rematch_codex])
    assert host.detect(omp, "codex") is None and host.detect(omp, "omp") == Source("omp", omp, mutable_prefix=256)


@pytest.mark.parametrize(("folder", "slot", "wrote"), [
    (".omp/agent/sessions/--p--", False, "omp"),  # omp before its title slot, in its own folder
    (".pi/agent/sessions/--p--", True, "pi"),  # a pi file omp once opened (and gave a slot), in pi's folder
    ("copies/--p--", True, "omp"),
    ("copies/--p--", False, "pi"),
])
def test_a_named_file_is_the_harness_its_folder_or_first_line_says(
        tmp_path: Path, folder: str, slot: bool, wrote: str) -> None:
    """Both plugins asked (a named path): exactly one claims, the one ``discover.writer`` names."""
    import rematch_pi
    from rematch_trace.testing import make_host

    path = write(tmp_path / folder / "s.jsonl", [title_slot(), header()] if slot else [header()])
    for order in ([rematch_omp, rematch_pi], [rematch_pi, rematch_omp]):
        src = make_host(order).detect(path, None)
        assert src is not None and src.harness == wrote


def test_claims_a_header_longer_than_the_head_and_a_gzip_archive(tmp_path: Path) -> None:
    long = write(tmp_path / "long.jsonl", [title_slot(), header(previousSessionFiles=["/x" * 100] * 40)])
    assert len(long.read_bytes().split(b"\n")[1]) > 4096
    assert rematch_omp.detect_source(path=long, head=_head(long), hint=None) is not None
    gz = tmp_path / "arch.jsonl.gz"
    gz.write_bytes(gzip.compress((json.dumps(title_slot()) + "\n" + json.dumps(header()) + "\n").encode()))
    src = rematch_omp.detect_source(path=gz, head=_head(gz), hint="omp")
    assert src is not None and src.compression == "gz"
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(b"not gzip at all")
    assert rematch_omp.detect_source(path=broken, head=_head(broken), hint=None) is None


def test_subagents_in_an_archive_and_with_the_parent_gone(tmp_path: Path) -> None:
    proj = tmp_path / "archive" / "sessions" / "-p"
    stem = "2026-01-01T00-00-00-000Z_abc"
    write(proj / f"{stem}.jsonl.gz", [header()], gz=True)
    sub = write(proj / stem / "Scout.jsonl.gz", [header(sid="s")], gz=True)
    src = rematch_omp.detect_source(path=sub, head=_head(sub), hint="omp")
    assert src is not None and (src.agent_kind, src.parent) == ("sub", proj / f"{stem}.jsonl.gz")
    orphan = write(tmp_path / "-q" / stem / "Lone.jsonl", [header(sid="o")])
    src = rematch_omp.detect_source(path=orphan, head=_head(orphan), hint="omp")
    assert src is not None and src.agent_kind == "sub"


@pytest.mark.parametrize(
    ("tool", "action"),
    [("bash", "shell_exec"), ("eval", "shell_exec"), ("read", "file_read"), ("grep", "file_read"),
     ("find", "file_read"), ("ls", "file_read"), ("glob", "file_read"), ("ast_grep", "file_read"),
     ("write", "file_write"), ("edit", "file_edit"), ("multiedit", "file_edit"), ("apply_patch", "file_edit"),
     ("ast_edit", "file_edit"), ("fetch", "network"), ("web_search", "network"), ("browser", "network"),
     ("task", "subagent"), ("mcp__github_create_issue", "mcp"), ("mcp_legacy", "mcp"), ("todo", "other"),
     ("ask", "other"), ("Bash", "shell_exec")],
)
def test_classify_action(tool: str, action: str) -> None:
    assert rematch_omp.classify_action(tool=tool) == action
