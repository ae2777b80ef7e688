"""Fixtures of the live capture tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from capture_helpers import hook_env, make_repo, serving


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A repository folder for the session's cwd."""
    repo = make_repo(tmp_path / "project")
    (repo / "cli.py").write_text("import argparse\n")
    return repo


@pytest.fixture
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A data folder with ``rematch serve`` running on it (the built-in policy), and the hooks' environment
    (the module's ``SID`` as the session, a verdict waited for up to 20 s: the machine may be busy).
    A module that wants another environment defines its own ``served``."""
    data = tmp_path / "data"
    env = hook_env(tmp_path, data, getattr(request.module, "SID", ""), service=True)
    env["REMATCH_IPC_DEADLINE_MS"] = "20000"
    with serving(data, env):
        yield data, env
