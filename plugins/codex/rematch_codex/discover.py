"""Where Codex keeps its rollouts, which files are rollouts, and how to stream them.

Layout (``$CODEX_HOME``, else ``~/.codex``): live sessions under
``sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl`` (flat
``sessions/rollout-*.jsonl`` before v0.8), archived ones flat under
``archived_sessions/``. Cold rollouts may be zstd-compressed to
``rollout-*.jsonl.zst``; Codex itself reads the plain file when both exist, and
so do we.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import zstandard

from rematch_trace.host.fs import open_raw
from rematch_trace.host.source import Location, Problem, RawRecord, Source
from rematch_trace.importing.reader import read_source

HARNESS = "codex"

_ROLLOUT_NAME = re.compile(r"^rollout-.+\.jsonl(?:\.zst)?$")
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_UUID = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})")
_HEAD_BYTES = 64 * 1024


def codex_home() -> Path:
    """``$CODEX_HOME`` when set and non-empty, else ``~/.codex`` (as Codex resolves it)."""
    env = os.environ.get("CODEX_HOME", "")
    return Path(env).expanduser() if env.strip() else Path.home() / ".codex"


def locations() -> list[Location]:
    """The live and the archived rollout folders."""
    home = codex_home()
    return [Location(HARNESS, home / "sessions"), Location(HARNESS, home / "archived_sessions")]


def thread_id_of(path: Path) -> str | None:
    """The thread id in a rollout's file name, if any.

    A reverted thread's file is ``rollout-<time>-<thread id>_<rollout id>.jsonl``:
    the thread id is the first uuid.
    """
    found = _UUID.findall(path.name)
    return found[0].lower() if found else None


def _plain_head(path: Path) -> bytes:
    """The first :data:`_HEAD_BYTES` decompressed bytes of a zstd file; ``b""`` if unreadable.

    The 4 KiB head the core hands over rarely decodes on its own (a zstd block is
    up to 128 KiB), so the start of the first block is decoded from the file.
    """
    try:
        with open_raw(path) as raw:
            reader = zstandard.ZstdDecompressor().stream_reader(raw, read_size=_HEAD_BYTES)
            out = b""
            while len(out) < _HEAD_BYTES:
                chunk = reader.read(_HEAD_BYTES - len(out))
                if not chunk:
                    break
                out += chunk
            return out
    except (OSError, zstandard.ZstdError):
        return b""


def _looks_like_rollout(first: bytes) -> bool:
    """Whether the first line is a Codex rollout line of any generation."""
    first = first.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not first.startswith(b"{"):
        return False
    if b'"type":"session_meta"' in first and b'"payload"' in first:
        return True
    # Legacy (<= v0.31): a bare meta line {"id","timestamp","instructions",...}.
    return first.startswith(b'{"id":') and b'"timestamp"' in first and b'"instructions"' in first


def detect(path: Path, head: bytes, hint: str | None) -> Source | None:
    """Claim ``path`` when its name or its first line says it is a Codex rollout."""
    name = path.name
    zst = name.endswith(".jsonl.zst")
    if not (zst or name.endswith(".jsonl")):
        return None
    if zst:
        if not head.startswith(_ZSTD_MAGIC):
            return None
        # Codex prefers the plain rollout when both exist; the plain file is the live one.
        if path.with_name(name[: -len(".zst")]).exists():
            return None
        text = _plain_head(path)
    else:
        text = head
    first = text.split(b"\n", 1)[0]
    named = _ROLLOUT_NAME.match(name) is not None
    # A rollout's name is claim enough only where Codex keeps them (or for an empty head).
    if not _looks_like_rollout(first) and not (named and (hint == HARNESS or not first.strip())):
        return None
    kind: Literal["main", "sub"] = "main"
    if b'"source":{"subagent"' in first or b'"thread_source":"subagent"' in first:
        kind = "sub"
    return Source(HARNESS, path, agent_kind=kind, compression="zst" if zst else "")


def read(source: Source, start: int) -> Iterator[RawRecord | Problem]:
    """Stream ``source``'s records from decompressed byte ``start`` (the core's reader)."""
    return read_source(source, start)
