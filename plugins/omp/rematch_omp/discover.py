"""Where omp keeps sessions, and which files of the session format it shares with pi are omp's.

omp resolves its sessions folder from ``PI_CONFIG_DIR``, ``PI_CODING_AGENT_DIR``,
the named profile (``OMP_PROFILE``, legacy ``PI_PROFILE``) and, for the default
profile, an existing ``$XDG_DATA_HOME/omp``; ``PI_CODING_AGENT_SESSION_DIR``
writes sessions flat into one folder. ``omp gc`` moves old sessions, gzipped, to
``archive/sessions``. Upstream pi, whose files share the format, keeps
``~/.pi/agent/sessions``: its files are harness ``pi`` (the ``rematch-pi``
plugin, which reads them with this plugin's modules); :func:`writer` tells the
two apart where a folder does not (docs/trace-schema.md, Decisions).

A session's artifacts folder is its file path minus ``.jsonl``; subagent and
advisor transcripts live in it, so a transcript whose folder has a sibling
``<folder>.jsonl`` is a subagent's, and that sibling is its parent.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Mapping
from pathlib import Path

from rematch_trace.host.source import Compression, Location, Source
from rematch_trace.importing.reader import loads

HARNESS = "omp"
#: The suffixes omp writes: live sessions and ``omp gc`` archives.
SUFFIXES: tuple[tuple[str, Compression], ...] = ((".jsonl", ""), (".jsonl.gz", "gz"))

# ``fileSafeTimestamp(iso)`` + ``_``: the start of every session file name omp writes,
# so a folder named like this is a session's artifacts folder.
_SESSION_STEM = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:-\d+)?Z_")
# A header line too long for the 4 KiB head still starts like this (omp writes ``type`` first).
_HEADER_PREFIX = re.compile(rb'^\s*\{\s*"type"\s*:\s*"session"')
_BOM = b"\xef\xbb\xbf"


def _profile(env: Mapping[str, str]) -> str | None:
    # OMP_PROFILE wins over the legacy PI_PROFILE, and "default" selects no profile.
    raw = env.get("OMP_PROFILE")
    if raw is None or not raw.strip():
        raw = env.get("PI_PROFILE")
    name = (raw or "").strip()
    return None if not name or name.lower() == "default" else name


def locations() -> list[Location]:
    """omp's session folders (with its env overrides and profiles) and its archive."""
    return [Location(HARNESS, p) for p in session_roots(os.environ, Path.home())]


def session_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """The folders omp writes sessions into, given an environment and a home.

    Folders that do not exist are included; the caller skips them. pi reads the same
    ``PI_CODING_AGENT_DIR`` and ``PI_CODING_AGENT_SESSION_DIR``: a folder they name is pi's
    too (both plugins name it, and the core asks both about its files).
    """
    roots: list[Path] = []
    flat = env.get("PI_CODING_AGENT_SESSION_DIR")
    if flat:
        roots.append(Path(flat).expanduser())
    config_root = home / (env.get("PI_CONFIG_DIR") or ".omp")
    default_agent = config_root / "agent"
    profile = _profile(env)
    xdg = env.get("XDG_DATA_HOME")
    data: Path | None = None
    if profile is not None:
        agent = config_root / "profiles" / profile / "agent"
        # A named profile moves to XDG only when its own XDG folder exists.
        if xdg and (Path(xdg) / "omp" / "profiles" / profile).is_dir():
            data = Path(xdg) / "omp" / "profiles" / profile
    else:
        override = env.get("PI_CODING_AGENT_DIR")
        agent = Path(override).expanduser() if override else default_agent
        if xdg and agent == default_agent and (Path(xdg) / "omp").is_dir():
            data = Path(xdg) / "omp"  # XDG flattens the agent/ level
    for base in (data, agent):
        if base is not None:
            roots.append(base / "sessions")
            roots.append(base / "archive" / "sessions")
    unique: list[Path] = []
    for root in roots:
        if root not in unique:
            unique.append(root)
    return unique


def compression_of(path: Path) -> Compression | None:
    """``""`` or ``"gz"`` for a file name omp could have written, else ``None``."""
    name = path.name
    for suffix, compression in SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return compression
    return None


def _is_header(value: object) -> bool:
    return isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str)


def _is_title_slot(value: object) -> bool:
    return isinstance(value, dict) and value.get("type") == "title" and value.get("v") == 1


def looks_like_session(data: bytes) -> bool:
    """Whether the start of a (decompressed) file is an omp/pi session.

    The first line may be the fixed-width title slot; the first record after it
    must be the ``session`` header with a string id, as omp's loader requires.
    """
    if data.startswith(_BOM):
        data = data[3:]
    pos = 0
    for index in range(2):
        end = data.find(b"\n", pos)
        if end < 0:
            # The line runs past the head: judge it by how omp starts a header.
            return bool(_HEADER_PREFIX.match(data[pos:]))
        line = data[pos:end].strip()
        pos = end + 1
        try:
            value = loads(line)
        except ValueError:
            return False
        if index == 0 and _is_title_slot(value):
            continue
        return _is_header(value)
    return False


def _decompressed_head(head: bytes, compression: Compression) -> bytes | None:
    if compression != "gz":
        return head
    try:
        return zlib.decompressobj(wbits=31).decompress(head)
    except zlib.error:
        return None


def subagent_parent(path: Path, compression: Compression) -> Path | None:
    """The parent session file of a subagent or advisor transcript, else ``None``.

    omp's own stats parser calls anything deeper than ``<root>/<project>/<file>``
    a subagent; without the root, the artifacts-folder rule says the same: the
    folder has a sibling session file, or is named like one (parent deleted).
    """
    folder = path.parent
    for suffix, _ in SUFFIXES:
        sibling = folder.parent / (folder.name + suffix)
        if sibling.is_file():
            return sibling
    own_suffix = ".jsonl.gz" if compression == "gz" else ".jsonl"
    if path.name.startswith("__advisor") or _SESSION_STEM.match(folder.name):
        return folder.parent / (folder.name + own_suffix)
    # A nested subagent whose direct parent file is gone: an ancestor folder is a session's.
    for ancestor in list(folder.parents)[:3]:
        if _SESSION_STEM.match(ancestor.name):
            return folder.parent / (folder.name + own_suffix)
    return None


#: omp's fixed-width title slot, newline included.
TITLE_SLOT_BYTES = 256


def writer(path: Path, data: bytes) -> str:
    """Which harness wrote a session file of the shared format, ``"omp"`` or ``"pi"``, where no folder of
    one harness alone says so (a path the user named, a folder both harnesses write to).

    A folder named ``.omp`` on the way is omp's, one named ``.pi`` pi's (their config folders);
    elsewhere the first line says: omp writes its title slot first in every session file, pi never
    does. An omp file from before the title slot, kept outside ``.omp``, reads as pi's: nothing in
    it tells them apart.
    """
    folders = path.parts[:-1]
    if ".omp" in folders:
        return HARNESS
    if ".pi" in folders:
        return "pi"
    body = data[3:] if data.startswith(_BOM) else data
    end = body.find(b"\n")
    try:
        first = loads(body[: end if end >= 0 else len(body)].strip())
    except ValueError:
        return "pi"
    return HARNESS if _is_title_slot(first) else "pi"


def detect(path: Path, head: bytes, hint: str | None) -> Source | None:
    """Claim ``path`` for omp when its name and first bytes say it is a session omp wrote."""
    return claim(HARNESS, path, head, hint)


def claim(harness: str, path: Path, head: bytes, hint: str | None) -> Source | None:
    """``path`` as a source of ``harness`` (``omp`` or ``pi``), or ``None``.

    A file of the shared format found in the harness's own folders (``hint``: the core asks only
    the plugin that owns them) is that harness's; one the user named, or found in a folder both
    harnesses name, is the harness :func:`writer` says.
    """
    compression = compression_of(path)
    if compression is None:
        return None
    data = _decompressed_head(head, compression)
    if not data or not looks_like_session(data):
        return None
    if hint != harness and writer(path, data) != harness:
        return None
    # omp rewrites its title slot in place: a retitled file has only grown.
    slot = TITLE_SLOT_BYTES if not compression and data.startswith(b'{"type":"title"') else 0
    parent = subagent_parent(path, compression)
    if parent is not None:
        return Source(harness, path, agent_kind="sub", compression=compression, parent=parent, mutable_prefix=slot)
    return Source(harness, path, compression=compression, mutable_prefix=slot)


def stem(path: Path) -> str:
    """The file name without ``.jsonl`` / ``.jsonl.gz`` (a subagent's id)."""
    name = path.name
    for suffix, _ in SUFFIXES[::-1]:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name
