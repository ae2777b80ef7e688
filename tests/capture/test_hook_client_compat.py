"""The fast hook client (``rematch_trace/live/rematch_hook.py``) as its docstring promises it: syntax any
``python3`` from 3.8 on reads, and nothing imported but a few standard-library modules (no ``json``,
``socket``, ``enum`` or ``re``, whose imports cost milliseconds), started as the hooks start it. The rare
paths import more where they run, by design: no usable ``HOME`` (``pwd``), a folder path too long for a
socket (``hashlib``), starting a service (``subprocess``), and the capture without one (``site``, rematch)."""

from __future__ import annotations

import ast
import subprocess
import sys

from rematch_trace.live.install import hook_client

#: What a hook command's interpreter may import for the client beyond its own start-up.
ALLOWED_HEAVY_FREE = {"__future__", "_json", "_socket", "os", "stat", "_stat", "posixpath", "genericpath",
                      "_collections_abc", "posix", "time"}


def _imported(argv: list[str]) -> set[str]:
    """The modules ``-X importtime`` names for ``argv`` run with ``python -S -I``."""
    res = subprocess.run([sys.executable, "-S", "-I", "-X", "importtime", *argv], capture_output=True, text=True,
                         timeout=60, env={"REMATCH_HOME": "/nonexistent-rematch-home"})
    return {line.split("|")[-1].strip() for line in res.stderr.splitlines() if line.startswith("import time:")} - {
        "package"}


def test_the_client_reads_as_python_3_8() -> None:
    ast.parse(hook_client().read_text(), feature_version=(3, 8))


def test_the_client_imports_only_light_standard_modules() -> None:
    extra = _imported([str(hook_client()), "--where"]) - _imported(["-c", "pass"])
    assert extra <= ALLOWED_HEAVY_FREE, sorted(extra - ALLOWED_HEAVY_FREE)
    assert extra <= set(sys.stdlib_module_names)
    assert not extra & {"json", "socket", "enum", "re", "typing"}
