"""Fixtures of the live capture tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from capture_helpers import make_repo


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A repository folder for the session's cwd."""
    repo = make_repo(tmp_path / "project")
    (repo / "cli.py").write_text("import argparse\n")
    return repo
