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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from rig_install import INSTALL_TIMEOUT, VERSIONS, InstallError, binary, cache_root, pinned, prefix_of

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
#: The compiler's checks beyond ``strict``, for every TypeScript source of rematch.
OPTIONS: dict[str, Any] = {
    "strict": True, "noUnusedLocals": True, "noUnusedParameters": True, "noImplicitReturns": True,
    "noFallthroughCasesInSwitch": True, "noImplicitOverride": True, "target": "es2022", "module": "commonjs",
    "moduleResolution": "node10", "esModuleInterop": True, "skipLibCheck": True}
ESLINT_CONFIG = """\
import tseslint from "typescript-eslint";

export default tseslint.config(...tseslint.configs.recommended, ...tseslint.configs.strict);
"""


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


def clean_env(home: Path) -> dict[str, str]:
    """The caller's environment without rematch's or Claude Code's settings, ``home`` as HOME (no
    policy of the caller's applies)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REMATCH_", "CLAUDE_"))}
    env["HOME"] = str(home)
    return env


@dataclass
class TsCheck:
    """One TypeScript source of rematch and its node tests, checked with the pinned tools.

    ``modules`` is the pinned pi's ``node_modules`` (node's types, and pi's own); ``options``, the
    compiler options this source adds to :data:`OPTIONS` (``{modules}`` in a string is filled in).
    """

    source: Path
    tests: Path
    prefix: Path
    modules: Path
    work: Path
    options: dict[str, Any] = field(default_factory=dict)

    def _tsconfig(self, emit: bool) -> Path:
        extra = json.loads(json.dumps(self.options).replace("{modules}", str(self.modules)))
        opts = dict(OPTIONS, **extra, typeRoots=[str(self.modules / "@types")], types=["node"])
        if emit:
            opts.update(outDir=str(self.work / "out"), rootDir=str(ROOT))
        else:
            opts["noEmit"] = True
        path = self.work / ("tsconfig.emit.json" if emit else "tsconfig.json")
        path.write_text(json.dumps({"compilerOptions": opts, "files": [str(self.source), str(self.tests)]}))
        return path

    def tsc(self, emit: bool) -> subprocess.CompletedProcess[str]:
        """``tsc`` with the strict options over the source and its tests (``emit``: compiled for node
        under ``work/out``, else ``--noEmit``)."""
        return subprocess.run([str(self.prefix / "node_modules" / ".bin" / "tsc"), "-p", str(self._tsconfig(emit))],
                              capture_output=True, text=True, timeout=300)

    def eslint(self) -> subprocess.CompletedProcess[str]:
        """eslint with typescript-eslint's recommended and strict rules over a copy of the source."""
        lint = self.work / "lint"
        lint.mkdir(exist_ok=True)
        (lint / "eslint.config.mjs").write_text(ESLINT_CONFIG)
        if not (lint / "node_modules").exists():
            (lint / "node_modules").symlink_to(self.prefix / "node_modules")
        shutil.copy(self.source, lint / "rematch.ts")
        return subprocess.run([str(self.prefix / "node_modules" / ".bin" / "eslint"), "--max-warnings=0",
                               "rematch.ts"], cwd=lint, capture_output=True, text=True, timeout=300)

    def node_test(self, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        """``node --test`` of the compiled tests (after ``tsc(emit=True)``)."""
        compiled = self.work / "out" / self.tests.relative_to(ROOT).with_suffix(".js")
        return subprocess.run(["node", "--test", str(compiled)], capture_output=True, text=True, timeout=300, env=env)


def ts_check(source: Path, tests: Path, work: Path, **options: Any) -> TsCheck:
    """The :class:`TsCheck` of ``source``: skipped (failed under ``REMATCH_REQUIRE_HARNESSES=1``) without
    node, the tools or the pinned pi (whose packages give node's types)."""
    if shutil.which("node") is None:
        unavailable("node is not installed")
    try:
        prefix = tools()
        binary(pinned("pi"))
    except (InstallError, OSError) as exc:
        unavailable(f"the TypeScript tools or pi are not available: {exc}")
        raise
    return TsCheck(source, tests, prefix, prefix_of(pinned("pi")) / "node_modules", work, options)
