"""The fast hook client (``claude_plugin/bin/rematch_hook.py``), loaded as a module.

The client runs as ``python -S -I`` with the standard library alone, so it
cannot import this package; this package imports it instead (by path, once),
so what it prints for a deny is written in one place for both hook commands.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

_PATH = Path(__file__).resolve().parent / "claude_plugin" / "bin" / "rematch_hook.py"


def _load() -> Any:
    spec = importlib.util.spec_from_file_location("rematch_claude_code._fast_hook_client", _PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_client = _load()


def deny_output(verdict: dict[str, Any], harness: str = "claude_code") -> bytes:
    """The harness's ``PreToolUse`` output denying the call, with the verdict's reason (the fast
    client's ``deny_output``, keyed by harness)."""
    out: bytes = _client.deny_output(verdict, harness)
    return out
