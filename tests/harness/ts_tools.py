"""The TypeScript tools the extension's tests use, installed from the npm registry into the rig's cache.

``typescript`` (the type check, and the compile of the extension and its tests for node),
``eslint`` with ``typescript-eslint`` (the lint): pinned in ``versions.json`` under ``ts_tools``,
installed once with ``npm install --prefix`` into ``<cache>/rematch-ts-tools@<pins>`` (outside the
checkout, as the harnesses: :mod:`rig_install`), reused while its ``.rig-installed`` file is there.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from rig_install import INSTALL_TIMEOUT, VERSIONS, InstallError, cache_root


def pins() -> list[str]:
    """``package@version`` of each tool, as pinned."""
    doc = json.loads(VERSIONS.read_text())["ts_tools"]
    return [f"{name}@{version}" for name, version in sorted(doc.items())]


def tools() -> Path:
    """The prefix holding the tools (``node_modules/.bin/tsc``, ``eslint``), installing them first when absent."""
    wanted = pins()
    prefix = cache_root() / f"rematch-ts-tools@{hashlib.sha256(' '.join(wanted).encode()).hexdigest()[:12]}"
    done = prefix / ".rig-installed"
    if done.is_file():
        return prefix
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError("npm is not installed (apt-get install nodejs npm)")
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f".{prefix.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.is_file():
            return prefix
        res = subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error",
                              *wanted], capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
        if res.returncode != 0 or not (prefix / "node_modules" / ".bin" / "tsc").exists():
            raise InstallError(f"npm install {' '.join(wanted)} failed: {res.stderr[-2000:]}")
        done.write_text(" ".join(wanted))
    return prefix


def unavailable(why: str) -> None:
    """Skip (fail under ``REMATCH_REQUIRE_HARNESSES=1``, as the harnesses do: conftest.py)."""
    if os.environ.get("REMATCH_REQUIRE_HARNESSES") == "1":
        pytest.fail(f"REMATCH_REQUIRE_HARNESSES=1 but {why}")
    pytest.skip(why)
