"""Driving the real hook entry point as Claude Code does: a process per event, JSON on stdin."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from rematch_trace.live import paths

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
FIXTURE_CWD = "/work/project"
#: The older, slower entry point (``rematch-hook``), still installed as a console script.
HOOK = shutil.which("rematch-hook", path=str(Path(sys.executable).parent)) or "rematch-hook"


def hook_argv() -> list[str]:
    """The command ``rematch hooks install`` writes (the fast client), as argv."""
    from rematch_trace.live.install import hook_command

    words = shlex.split(hook_command())
    return words[1:] if words[:1] == ["exec"] else words  # the shell's exec: argv is what follows


#: What Claude Code runs for every hook event once ``rematch hooks install`` ran.
HOOK_ARGV = hook_argv()
REMATCH = shutil.which("rematch", path=str(Path(sys.executable).parent)) or "rematch"


def make_repo(root: Path, remote: str = "https://dev:s3cr3t-token@github.com/acme/widget.git") -> Path:
    """A repository as git leaves it on disk (no git process): HEAD, a branch ref, origin."""
    git = root / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs" / "heads" / "main").write_text("8f3c2a1b0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b\n")
    (git / "config").write_text(f'[core]\n\tbare = false\n[remote "origin"]\n\turl = {remote}\n')
    return root


def hook_env(home: Path, data: Path, session_id: str = "", project: Path | None = None,
             service: bool = False) -> dict[str, str]:
    """The environment Claude Code gives a hook (the documented variables), plus the data folder.

    ``service=False`` (``REMATCH_LIVE_SERVICE=0``): the hook captures in its own process and
    starts no ``rematch serve`` (which would outlive the test); the tests of the service start
    and stop their own.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REMATCH_", "CLAUDE_"))}
    env.update(HOME=str(home), REMATCH_HOME=str(data))
    if not service:
        env["REMATCH_LIVE_SERVICE"] = "0"
    if project is not None:
        env["CLAUDE_PROJECT_DIR"] = str(project)
    if session_id:
        env["CLAUDE_CODE_SESSION_ID"] = session_id
    return env


def run_hook(payload: Any, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    """Run the installed hook command once with ``payload`` (bytes as they are, else JSON) on stdin."""
    if isinstance(payload, bytes):
        data = payload
    else:
        try:
            data = orjson.dumps(payload)
        except TypeError:  # a lone surrogate: JSON's escape for it, as a hostile harness could send
            data = json.dumps(payload).encode()
    return subprocess.run([*HOOK_ARGV, *args], input=data, env=env, capture_output=True, timeout=60)


#: The key of each recorded hook line saying how many transcript lines existed when it ran.
LINES_KEY = "__transcript_lines__"


def load_fixture(project: Path, transcript: Path) -> tuple[list[dict[str, Any]], bytes]:
    """The recorded hook payloads and transcript bytes, moved to ``project`` and ``transcript``."""
    hooks, _progress, text = load_fixture_progress(project, transcript)
    return hooks, text


def load_fixture_progress(project: Path, transcript: Path) -> tuple[list[dict[str, Any]], list[int], bytes]:
    """:func:`load_fixture`, and for each hook how many transcript lines the session had written then."""
    hooks = []
    progress = []
    for raw in (FIXTURES / "hooks.jsonl").read_bytes().splitlines():
        h = orjson.loads(raw.replace(FIXTURE_CWD.encode(), str(project).encode()))
        h["transcript_path"] = str(transcript)
        progress.append(h.pop(LINES_KEY))
        hooks.append(h)
    text = (FIXTURES / "transcript.jsonl").read_bytes().replace(FIXTURE_CWD.encode(), str(project).encode())
    return hooks, progress, text


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every line of a JSONL file."""
    return [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]


@contextmanager
def serving(data: Path, env: dict[str, str], argv: list[str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """A real ``rematch serve`` on ``data`` with ``env`` until the block ends: listening on the event
    socket when the block starts, terminated and reaped when it ends. ``argv``: the command (by
    default the service's module, ``--quiet``)."""
    argv = argv or [sys.executable, "-m", "rematch_trace.live.service", "--data", str(data), "--quiet"]
    service = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 60
        while not paths.events_socket(data).exists():
            assert time.monotonic() < end and service.poll() is None, "rematch serve did not listen"
            time.sleep(0.02)
        yield service
    finally:
        service.terminate()
        assert service.wait(timeout=60) is not None


class HookSession:
    """One Claude Code session driven as the harness drives it: a repository as its folder, the
    transcript Claude Code appends to (``<root>/<projects>/-project/<sid>.jsonl``), rematch's data
    folder, and the hook command run once an event, which must exit 0 and print nothing.

    ``home``: HOME, under ``root`` (``""``: ``root`` itself); ``made``: the transcript's folder is
    made at once (else it is left to the test).
    """

    def __init__(self, root: Path, sid: str, projects: str = "config/projects", home: str = "",
                 made: bool = True) -> None:
        self.sid = sid
        self.project = make_repo(root / "project")
        self.transcript = root / projects / "-project" / f"{sid}.jsonl"
        if made:
            self.transcript.parent.mkdir(parents=True)
        self.data = root / "data"
        self.env = hook_env(root / home if home else root, self.data, sid, self.project)
        self.base: dict[str, Any] = {"session_id": sid, "transcript_path": str(self.transcript),
                                     "cwd": str(self.project)}

    def send(self, name: str, **fields: Any) -> None:
        """Run the hook for event ``name`` with ``fields``: exit 0, nothing printed."""
        res = run_hook({**self.base, "hook_event_name": name, **fields}, self.env)
        assert (res.returncode, res.stdout, res.stderr) == (0, b"", b""), name

    def append(self, path: Path, *lines: dict[str, Any]) -> None:
        """Append ``lines`` to ``path`` as JSONL, as the harness writes its transcript."""
        with path.open("ab") as f:
            f.write(b"".join(orjson.dumps(x) + b"\n" for x in lines))

    def write(self, *lines: dict[str, Any]) -> None:
        """Append ``lines`` to the session's transcript."""
        self.append(self.transcript, *lines)
