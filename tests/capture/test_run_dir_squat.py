"""The runtime socket folder another user made first (issue 29.5): passed over, never used, and said.

A data folder whose path is too long for ``run/`` inside it puts the sockets in
``rematch-<uid>-<hash>`` in ``$XDG_RUNTIME_DIR`` (else the temporary folder). Another user
can make that name first in a shared folder; the service then takes the next name of the
list, and the hook client walks the same list to find it. Run as root (CI), the squatter
is made with ``os.chown`` to uid 65534.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from capture_helpers import HOOK_ARGV, REMATCH, hook_env, run_hook

from rematch_trace.live import paths

NOBODY = 65534
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="making another user's folder needs root (CI runs as root)")


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[tuple[Path, Path, dict[str, str]]]:
    """A shared, sticky folder standing for /tmp, a data folder too long for run/ inside it, the environment."""
    base = Path(tempfile.mkdtemp(prefix="rm-", dir="/tmp"))  # short: the socket paths must fit in it
    os.chmod(base, 0o1777)
    data = tmp_path / ("d" * 110)
    env = hook_env(tmp_path, data, "squat-1", service=True)
    env["XDG_RUNTIME_DIR"] = str(base)
    old = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(base)  # this process computes the same names
    try:
        yield base, data, env
    finally:
        shutil.rmtree(base)
        if old is None:
            os.environ.pop("XDG_RUNTIME_DIR", None)
        else:
            os.environ["XDG_RUNTIME_DIR"] = old


def _squat(path: Path, link_to: Path | None = None) -> None:
    if link_to is not None:
        path.symlink_to(link_to)
        os.lchown(path, NOBODY, NOBODY)
        return
    path.mkdir(mode=0o777)
    os.chmod(path, 0o777)
    os.chown(path, NOBODY, NOBODY)


def _where(env: dict[str, str]) -> str:
    res = subprocess.run([*HOOK_ARGV, "--where"], capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout.splitlines()[1]


def test_a_squatted_name_is_passed_over_by_the_service_and_the_hook_alike(
        shared: tuple[Path, Path, dict[str, str]]) -> None:
    base, data, env = shared
    names = paths.runtime_candidates(data)
    assert [p.parent for p in names] == [base] * paths.CANDIDATES and names[1].name == names[0].name + "-1"
    _squat(names[0])  # another user's folder, open to all
    _squat(names[1], link_to=base)  # another user's link
    assert _where(env) == str(names[2] / "events.sock")  # the hook's walk, before any service
    service = subprocess.Popen([REMATCH, "serve", "--out", str(data)], env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (names[2] / "events.sock").exists():
            assert service.poll() is None and time.monotonic() < deadline, service.communicate()
            time.sleep(0.05)
        assert os.stat(names[2]).st_mode & 0o777 == 0o700 and os.stat(names[2]).st_uid == os.getuid()
        assert list(names[0].iterdir()) == []  # nothing of ours in the squatter's folder
        # The hook finds the service there: a call is answered by it (no in-process capture: no plugin).
        hook_env_ = dict(env, REMATCH_LOAD_PLUGINS="", REMATCH_IPC_DEADLINE_MS="20000")
        res = run_hook({"session_id": "squat-1", "cwd": "/", "hook_event_name": "UserPromptSubmit",
                        "prompt": "hello"}, hook_env_)
        assert (res.returncode, res.stdout) == (0, b"")
        deadline = time.monotonic() + 60
        while not (data / "live" / "squat-1.json").exists():
            assert time.monotonic() < deadline, "the service never got the hook's event"
            time.sleep(0.05)
        assert _where(env) == str(paths.events_socket(data)) == str(names[2] / "events.sock")
    finally:
        service.terminate()
        service.wait(timeout=60)


def test_with_every_name_taken_the_service_refuses_and_says_where_it_looked(
        shared: tuple[Path, Path, dict[str, str]]) -> None:
    _base, data, env = shared
    names = paths.runtime_candidates(data)
    for p in names:
        _squat(p)
    res = subprocess.run([REMATCH, "serve", "--out", str(data)], capture_output=True, text=True, env=env,
                         timeout=60)
    assert res.returncode == 2, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    for p in names:
        assert f"{p} belongs to uid {NOBODY}" in res.stderr, res.stderr
    assert "XDG_RUNTIME_DIR" in res.stderr
    assert all(list(p.iterdir()) == [] for p in names)  # no socket in a folder that is not ours
    # The client finds no service, and uses none of them.
    assert _where(env) == str(names[0] / "events.sock")


def test_the_hook_and_the_core_try_the_same_number_of_names() -> None:
    from rematch_trace.live import rematch_hook

    assert rematch_hook.RUN_CANDIDATES == paths.CANDIDATES
