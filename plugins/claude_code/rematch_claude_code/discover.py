"""Where Claude Code keeps transcripts, and which files are its transcripts.

Layout (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``)::

    projects/<project>/<session>.jsonl                        a session
    projects/<project>/agent-<id>.jsonl                       a 2.0.x subagent
    projects/<project>/<session>/subagents/agent-<id>.jsonl   a 2.1.x subagent
    projects/<project>/<session>/tool-results/...             spilled outputs (not transcripts)
    projects/<project>/memory/...                             auto-memory (not transcripts)
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Literal

import orjson

from rematch_trace.host.source import Compression, Location, Source

HARNESS = "claude_code"

#: Folders whose files are never transcripts.
_SKIP_DIRS = frozenset({"memory", "tool-results"})
#: Every line type Claude Code is known to write (1.0 to 2.1.328); others are reported. Only
#: ``translate._HANDLED`` types are read; the rest are known and passed over (docs/claude-code-format.md).
KNOWN_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "summary",
        "progress",
        "attachment",
        "file-history-snapshot",
        "queue-operation",
        "permission-mode",
        "last-prompt",
        "custom-title",
        "ai-title",
        "agent-name",
        "agent-color",
        "agent-setting",
        "pr-link",
        "saved_hook_context",
        "cost-state",
        # 2.1.150 and later: the permission mode's name, and a remote-control bridge.
        "mode",
        "bridge-session",
        # 2.1.328: the request log (a shape, each request, and the message blobs it sent: copies of
        # messages and tool results already in the conversation lines), tools used, a latch.
        "api-request-shape",
        "api-request",
        "api-request-blob",
        "tools-used",
        "atis-latch",
    }
)
#: Types that are Claude Code's even without a ``sessionId``.
_CC_BARE_TYPES = frozenset({"summary", "file-history-snapshot"})


def config_root() -> Path:
    """``$CLAUDE_CONFIG_DIR`` when set, else ``~/.claude`` (Claude Code's own rule)."""
    env = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    return Path(env).expanduser() if env else Path.home() / ".claude"


def locations() -> list[Location]:
    """The folder Claude Code writes its project transcripts to."""
    return [Location(HARNESS, config_root() / "projects")]


def _compression(name: str) -> Compression | None:
    if name.endswith(".jsonl"):
        return ""
    if name.endswith(".jsonl.zst"):
        return "zst"
    if name.endswith(".jsonl.gz"):
        return "gz"
    return None


def _plain_head(head: bytes, compression: Compression) -> bytes:
    """The head decompressed as far as it goes (a partial frame is fine)."""
    if compression == "":
        return head
    try:
        if compression == "gz":
            return zlib.decompressobj(wbits=31).decompress(head)
        import zstandard

        return bytes(zstandard.ZstdDecompressor().decompressobj().decompress(head))
    except Exception:
        # A head we cannot decompress says nothing either way.
        return b""


def _first_object(head: bytes) -> dict[str, object] | None:
    """The first line of ``head`` as a JSON object, when it is whole and parses."""
    line, newline, _ = head.lstrip(b"\xef\xbb\xbf").partition(b"\n")
    if not newline and len(head) >= 4096:
        return None
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def looks_like_claude_code(head: bytes) -> bool:
    """Whether a (decompressed) head reads as a Claude Code transcript."""
    first = _first_object(head)
    if first is not None:
        typ = first.get("type")
        if not isinstance(typ, str) or typ not in KNOWN_TYPES:
            return False
        return typ in _CC_BARE_TYPES or isinstance(first.get("sessionId"), str)
    # A first line longer than the head: fall back to the keys only Claude Code spells so.
    return b'"sessionId":' in head and (b'"parentUuid":' in head or b'"leafUuid":' in head)


def _is_sidechain_file(head: bytes) -> bool:
    first = _first_object(head)
    return first is not None and first.get("isSidechain") is True and isinstance(first.get("agentId"), str)


def detect(path: Path, head: bytes, hint: str | None) -> Source | None:
    """Claim ``path`` when it is a Claude Code transcript (see the module docstring)."""
    compression = _compression(path.name)
    if compression is None or not head:
        return None
    near = list(path.parents)[:3]
    names = {p.name for p in near}
    if names & _SKIP_DIRS:
        return None
    # Workflow runs keep a journal beside their agents' transcripts; only the agents are sessions.
    if "workflows" in names and not path.name.startswith("agent-"):
        return None
    plain = _plain_head(head, compression)
    if hint != HARNESS and not looks_like_claude_code(plain):  # found elsewhere than its own folders
        return None
    kind: Literal["main", "sub"] = "main"
    parent: Path | None = None
    if path.name.startswith("agent-") or _is_sidechain_file(plain):
        kind = "sub"
        for folder in near:
            if folder.name == "subagents":
                session_dir = folder.parent
                parent = session_dir.parent / (session_dir.name + ".jsonl")
                break
    return Source(HARNESS, path, kind, compression, parent)


def session_stem(path: Path) -> str:
    """The file name without its ``.jsonl[.gz|.zst]`` suffixes."""
    name = path.name
    for suffix in (".zst", ".gz"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name[: -len(".jsonl")] if name.endswith(".jsonl") else name
