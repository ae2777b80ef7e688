"""What the core knows of the built-in harnesses, as data, for when their plugin is absent.

A plugin that is not installed cannot say its files are its own, so a file no
installed plugin claims would be skipped without a reason. These signatures
(where each harness keeps its files, how its file names and first bytes look)
let the core say which plugin to install instead. They only ever name a
plugin; claiming and reading stay the plugins' work.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Collection, Mapping
from pathlib import Path

import attrs


@attrs.frozen
class KnownHarness:
    """The signature of one built-in harness's transcripts.

    :param harness: the harness name (``Source.harness``) and the plugin's entry-point name.
    :param title: the harness as users know it.
    :param distribution: the distribution to install for it.
    :param folders: path pieces (``/``-separated, matched anywhere in a file's
        path) of the folders the harness keeps transcripts in.
    :param homes: default transcript folders: (environment variable that
        replaces the home-relative base, or ``""``; path relative to it).
    :param name: a pattern the file name of every transcript matches, when
        the harness names its files so (``None``: names say nothing).
    :param first_line: patterns, any of which the first line matches.
    """

    harness: str
    title: str
    distribution: str
    folders: tuple[str, ...]
    homes: tuple[tuple[str, str], ...]
    name: re.Pattern[str] | None
    first_line: tuple[re.Pattern[bytes], ...]


KNOWN: tuple[KnownHarness, ...] = (
    KnownHarness(
        harness="claude_code",
        title="Claude Code",
        distribution="rematch-claude-code",
        folders=("/.claude/projects/",),
        homes=(("CLAUDE_CONFIG_DIR", "projects"), ("", ".claude/projects")),
        name=None,
        first_line=(
            re.compile(rb'"sessionId"\s*:.*"(?:parentUuid|leafUuid)"\s*:|"(?:parentUuid|leafUuid)"\s*:.*"sessionId"\s*:'),
            re.compile(rb'^\{\s*"type"\s*:\s*"(?:summary|file-history-snapshot)"'),
        ),
    ),
    KnownHarness(
        harness="codex",
        title="Codex",
        distribution="rematch-codex",
        folders=("/.codex/sessions/", "/.codex/archived_sessions/"),
        homes=(("CODEX_HOME", "sessions"), ("", ".codex/sessions"), ("CODEX_HOME", "archived_sessions"),
               ("", ".codex/archived_sessions")),
        name=re.compile(r"^rollout-.+\.jsonl(?:\.zst)?$"),
        first_line=(
            re.compile(rb'"type"\s*:\s*"session_meta".*"payload"\s*:'),
            re.compile(rb'^\{"id":.*"timestamp".*"instructions"'),
        ),
    ),
    # omp before pi: the two share a format, and only omp starts a file with its title slot.
    KnownHarness(
        harness="omp",
        title="omp",
        distribution="rematch-omp",
        folders=("/.omp/agent/sessions/", "/.omp/agent/archive/sessions/"),
        homes=(("", ".omp/agent/sessions"),),
        name=None,
        first_line=(re.compile(rb'^\{\s*"type"\s*:\s*"title"\s*,\s*"v"\s*:\s*1\b'),),
    ),
    KnownHarness(
        harness="pi",
        title="pi",
        distribution="rematch-pi",
        folders=("/.pi/agent/sessions/",),
        homes=(("PI_CODING_AGENT_DIR", "sessions"), ("", ".pi/agent/sessions")),
        name=None,
        first_line=(re.compile(rb'^\{\s*"type"\s*:\s*"session"\s*,.*"id"\s*:'),),
    ),
)

_BOM = b"\xef\xbb\xbf"


def _first_line(head: bytes, name: str) -> bytes:
    if name.endswith(".gz"):
        try:
            head = zlib.decompressobj(wbits=31).decompress(head)
        except zlib.error:
            return b""
    elif name.endswith(".zst"):
        return b""  # a zstd head rarely decodes on its own: the name and folder still speak
    if head.startswith(_BOM):
        head = head[3:]
    return head.split(b"\n", 1)[0].strip()


def looks_like(path: Path, head: bytes) -> KnownHarness | None:
    """The built-in harness whose folder, file name or first line ``path`` has, if any."""
    where = "/" + "/".join(path.parts[1:] if path.is_absolute() else path.parts)
    first = _first_line(head, path.name)
    for known in KNOWN:
        if any(folder in where for folder in known.folders):
            return known
        if known.name is not None and known.name.match(path.name):
            return known
        if first and any(p.search(first) for p in known.first_line):
            return known
    return None


def missing_plugin(path: Path, head: bytes, loaded: Collection[str], broken: Collection[str] = ()) -> str | None:
    """Why a file no plugin claimed was left, when it looks like a harness whose plugin is absent.

    :param loaded: names of the plugins registered.
    :param broken: names of the plugins that failed to load.
    :return: one sentence naming the plugin to install, or ``None``.
    """
    known = looks_like(path, head)
    if known is None or known.harness in loaded:
        return None
    if known.harness in broken:
        return f"looks like a transcript of {known.title}, but the plugin {known.harness!r} failed to load (see above)"
    return f"looks like a transcript of {known.title}, but no installed plugin reads it: pip install {known.distribution}"


def absent_homes(loaded: Collection[str], env: Mapping[str, str] | None = None, home: Path | None = None) -> list[str]:
    """One line per default folder of a built-in harness that exists while its plugin is absent."""
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    out: list[str] = []
    for known in KNOWN:
        if known.harness in loaded:
            continue
        for var, rel in known.homes:
            if var and not env.get(var, "").strip():
                continue
            base = Path(env[var]).expanduser() if var else home
            folder = base / rel
            if folder.is_dir():
                out.append(f"{folder} holds {known.title} transcripts, not imported: pip install {known.distribution}")
                break
    return out
