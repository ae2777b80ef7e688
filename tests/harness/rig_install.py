"""The pinned harnesses: which versions (``versions.json``), and installing them from the npm registry.

Each ``package@version`` goes into its own prefix under the cache folder, outside the checkout
(``$REMATCH_HARNESS_CACHE``, else ``$XDG_CACHE_HOME/rematch-harnesses``, else
``~/.cache/rematch-harnesses``), with ``npm install --prefix``. An install that finished leaves a
``.rig-installed`` file holding the version the binary reported; the next run reuses it.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
VERSIONS = HERE / "versions.json"
#: Seconds one ``npm install`` may take (a harness's native binary is a few hundred MB).
INSTALL_TIMEOUT = 900


@dataclass(frozen=True)
class Harness:
    """One harness as pinned: its key in versions.json, npm package, version and binary name.

    ``runtime`` names more packages installed beside it (omp's CLI is a bun script: ``bun`` from
    the npm registry), their binaries on ``PATH`` when it runs (:func:`path_of`).
    """

    name: str
    package: str
    version: str
    bin: str
    runtime: tuple[str, ...] = ()


def _release(version: str) -> tuple[int, ...]:
    """``1.6.0`` as ``(1, 6, 0)`` (a pre-release's tail ignored), for comparing versions."""
    return tuple(int(x) if x.isdigit() else 0 for x in version.split("-", 1)[0].split("."))


def pinned(name: str) -> Harness:
    """The harness ``name`` (``claude_code``, ``codex``, ``pi``) at its pinned version.

    ``REMATCH_RIG_VERSION_<NAME>`` (e.g. ``REMATCH_RIG_VERSION_CLAUDE_CODE=2.1.330``) runs the rig
    against another version: how ``compat.py`` tries the newest ones. A harness whose package moved
    (versions.json's ``moved``: pi went on as ``@earendil-works/pi-coding-agent`` at 1.0.0) is that
    package from its ``since`` version on, with the runtime it needs (``with``: pi 1.x needs Node
    22.19 or later, installed from the npm registry as ``node@22`` beside it, first on ``PATH``).
    """
    doc = json.loads(VERSIONS.read_text())[name]
    version = os.environ.get(f"REMATCH_RIG_VERSION_{name.upper()}") or doc["version"]
    moved = doc.get("moved")
    if moved and _release(version) >= _release(moved["since"]):
        return Harness(name, moved["package"], version, doc["bin"], tuple(moved.get("with", ())))
    return Harness(name, doc["package"], version, doc["bin"], tuple(doc.get("with", ())))


def moved_pin(name: str) -> Harness:
    """The harness ``name`` at the version pinned in the package it moved to (versions.json's
    ``moved.version``: pi 1.6.0 as ``@earendil-works/pi-coding-agent``), run beside its old pin."""
    doc = json.loads(VERSIONS.read_text())[name]["moved"]
    return Harness(name, doc["package"], doc["version"], json.loads(VERSIONS.read_text())[name]["bin"],
                   tuple(doc.get("with", ())))


def newest_version(name: str) -> str:
    """The newest published version of harness ``name``: of the package it moved to, if it moved (the
    one place the packages of a harness are named is versions.json)."""
    doc = json.loads(VERSIONS.read_text())[name]
    return newest(doc["moved"]["package"] if doc.get("moved") else doc["package"])


def cache_root() -> Path:
    """Where harness installs live (never inside the checkout)."""
    explicit = os.environ.get("REMATCH_HARNESS_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "rematch-harnesses"


def prefix_of(h: Harness) -> Path:
    """The install prefix of one package version (``/`` of a scope written ``+``)."""
    return cache_root() / f"{h.package.replace('/', '+')}@{h.version}"


def path_of(h: Harness, path: str = "/usr/local/bin:/usr/bin:/bin") -> str:
    """``PATH`` for running the harness: its prefix's binaries (its runtime's) first."""
    return f"{prefix_of(h) / 'node_modules' / '.bin'}:{path}"


class InstallError(RuntimeError):
    """npm is missing, the install failed, or the binary does not run."""


def binary(h: Harness) -> Path:
    """The harness's executable, installing it first when the cache lacks it."""
    prefix = prefix_of(h)
    exe = prefix / "node_modules" / ".bin" / h.bin
    done = prefix / ".rig-installed"
    if done.is_file() and exe.exists():
        return exe
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError("npm is not installed (apt-get install nodejs npm)")
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / f".{prefix.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second test process waits for the first install
        if done.is_file() and exe.exists():
            return exe
        res = subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                              "--loglevel=error", f"{h.package}@{h.version}", *h.runtime],
                             capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
        if res.returncode != 0 or not exe.exists():
            raise InstallError(f"npm install {h.package}@{h.version} failed: {res.stderr[-2000:]}")
        ver = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60,
                             env={**os.environ, "PATH": path_of(h, os.environ.get("PATH", ""))})
        # pi 0.73.1 prints its version on stderr (with its dependencies as npm resolves them today).
        reported = ver.stdout.strip() or ver.stderr.strip()
        if ver.returncode != 0 or h.version not in reported:
            raise InstallError(f"{exe} --version gave {ver.returncode}: {ver.stdout[-300:]} {ver.stderr[-300:]}")
        done.write_text(reported + "\n")
    return exe


def newest(package: str) -> str:
    """The newest published version of ``package`` (``npm view``; for the compatibility script)."""
    res = subprocess.run(["npm", "view", package, "version"], capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        raise InstallError(f"npm view {package}: {res.stderr[-500:]}")
    return res.stdout.strip()
