"""Fixtures of the harness rig: the pinned harness binaries, installed once per test run.

Under pytest-xdist each worker looks the binaries up; a missing one is installed once, by the first
worker to need it, under :mod:`rig_install`'s file lock (the other waits for it). Each rig module runs
its harness session in a module-scoped fixture, and ``--dist loadfile`` keeps a module on one worker,
so every session runs once per test run.

Without ``REMATCH_REQUIRE_HARNESSES=1`` a harness that cannot be had (no npm, no registry, no
network namespace) skips its tests; with it (``.ci/run`` sets it) they fail, as the corpus tests do
under ``REMATCH_REQUIRE_CORPUS=1``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rig_install import InstallError, binary, moved_pin, pinned
from rig_session import namespace_works


def _unavailable(why: str) -> None:
    if os.environ.get("REMATCH_REQUIRE_HARNESSES") == "1":
        pytest.fail(f"REMATCH_REQUIRE_HARNESSES=1 but {why}")
    pytest.skip(why)


def harness_binary(name: str, moved: bool = False) -> Path:
    """The pinned harness's executable (``moved``: its pin in the package it moved to), after checking a
    network namespace can be made."""
    if not namespace_works():
        _unavailable("no network namespace can be made here (unshare -n needs root or user namespaces)")
    try:
        return binary(moved_pin(name) if moved else pinned(name))
    except (InstallError, OSError) as exc:
        _unavailable(f"harness {name} is not available: {exc}")
        raise


@pytest.fixture(scope="session")
def claude_code_exe() -> Path:
    """Claude Code at the pinned version."""
    return harness_binary("claude_code")


@pytest.fixture(scope="session")
def codex_exe() -> Path:
    """Codex at the pinned version."""
    return harness_binary("codex")


@pytest.fixture(scope="session")
def pi_exe() -> Path:
    """pi at the pinned version."""
    return harness_binary("pi")


@pytest.fixture(scope="session")
def pi_moved_exe() -> Path:
    """pi as it ships now (``@earendil-works/pi-coding-agent``, with the Node it needs beside it)."""
    return harness_binary("pi", moved=True)


@pytest.fixture(scope="session")
def gemini_cli_exe() -> Path:
    """Gemini CLI at the pinned version."""
    return harness_binary("gemini_cli")


@pytest.fixture(scope="session")
def gemini_cli_doc_exe() -> Path:
    """Gemini CLI at the older pinned version that keeps a session as a JSON document."""
    return harness_binary("gemini_cli_doc")


@pytest.fixture(scope="session")
def omp_exe() -> Path:
    """omp at the pinned version (with bun beside it)."""
    return harness_binary("omp")


@pytest.fixture(scope="session")
def opencode_exe() -> Path:
    """opencode at the pinned version."""
    return harness_binary("opencode")


@pytest.fixture(scope="session")
def ccusage_exe() -> Path:
    """ccusage at the pinned version (the totals it prints are compared with ``rematch stats --by``)."""
    return harness_binary("ccusage")
