"""Where opencode keeps its sessions, and which files are its sources.

Two shapes: the database (``opencode.db``; a channel build's ``opencode-<channel>.db``) and,
before it, the session tree under ``storage/``. A tree beside a database is the one opencode
migrated into it on first start: its session files are claimed and read as empty (see
:func:`rematch_opencode.store.read_tree`), so no session is read twice and none is reported
as an unknown file.
"""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Mapping
from pathlib import Path

from rematch_trace.host.source import Location, Source

HARNESS = "opencode"
#: The file names of opencode's sources (``Location.names``).
NAMES = ("opencode*.db", "ses_*.json")
SQLITE_MAGIC = b"SQLite format 3\x00"


def locations() -> list[Location]:
    """opencode's data folder (``$XDG_DATA_HOME/opencode``, and the folder of ``$OPENCODE_DB``)."""
    return [Location(HARNESS, p, NAMES) for p in data_folders(os.environ, Path.home())]


def data_folders(env: Mapping[str, str], home: Path) -> list[Path]:
    """``$XDG_DATA_HOME/opencode`` (else ``~/.local/share/opencode``), and ``$OPENCODE_DB``'s folder."""
    xdg = env.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else home / ".local" / "share"
    out = [base / "opencode"]
    db = env.get("OPENCODE_DB")
    if db and os.path.isabs(db) and Path(db).parent not in out:
        out.append(Path(db).parent)
    return out


def is_database(path: Path) -> bool:
    """Whether the name is one of opencode's databases (not its ``-wal``/``-shm`` files)."""
    return fnmatch.fnmatchcase(path.name, "opencode*.db")


def tree_root(path: Path) -> Path | None:
    """The ``storage`` folder of a session file ``storage/session/<project>/ses_*.json``, else ``None``."""
    if not fnmatch.fnmatchcase(path.name, "ses_*.json"):
        return None
    storage = path.parent.parent.parent
    if path.parent.parent.name != "session" or storage.name != "storage":
        return None
    return storage


#: Folders of a tree beside ``session/`` whose files are named by session id but hold no messages
#: (a session's file diffs, its share record): claimed and read as empty, so that an import of the
#: tree does not report them as unknown files.
ASIDE = ("session_diff", "session_share")


def aside(path: Path) -> bool:
    """Whether ``path`` is ``storage/<session_diff|session_share>/ses_*.json`` (no transcript)."""
    return (fnmatch.fnmatchcase(path.name, "ses_*.json") and path.parent.name in ASIDE
            and path.parent.parent.name == "storage")


def migrated(storage: Path) -> bool:
    """Whether a database sits beside the tree (opencode moved the tree into it)."""
    try:
        return any(is_database(Path(e.name)) for e in os.scandir(storage.parent) if e.is_file())
    except OSError:
        return False


def detect(path: Path, head: bytes) -> Source | None:
    """Claim a database by its name and SQLite header, a session file by its place and JSON head."""
    if is_database(path):
        return Source(HARNESS, path) if head.startswith(SQLITE_MAGIC) else None
    if aside(path):
        return Source(HARNESS, path)
    storage = tree_root(path)
    if storage is None or not head.lstrip().startswith(b"{"):
        return None
    parent = None
    try:
        doc = json.loads(head)  # a session file is a few hundred bytes: whole in the head
    except (ValueError, RecursionError):  # a hostile head nested past the stack: no parent read
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("parentID"), str):
        parent = session_file(storage, doc["parentID"])
    return Source(HARNESS, path, agent_kind="sub" if parent is not None or _has_parent(doc) else "main",
                  parent=parent)


def _has_parent(doc: object) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("parentID"), str)


def session_file(storage: Path, session_id: str) -> Path | None:
    """The file of session ``session_id`` in a tree (its project folder is not in the id)."""
    if not session_id.startswith("ses_") or "/" in session_id or "\0" in session_id:
        return None
    try:
        projects = sorted(os.scandir(storage / "session"), key=lambda e: e.name)
    except OSError:
        return None
    for proj in projects:
        candidate = Path(proj.path) / f"{session_id}.json"
        if candidate.is_file():
            return candidate
    return None


def _listing(folder: Path) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(folder) if e.name.endswith(".json"))
    except OSError:
        return []


def members(path: Path) -> list[Path] | None:
    """The files (and folders) a source's content lives in besides itself."""
    if is_database(path):
        return [path.with_name(path.name + "-wal")]
    if aside(path):
        return []
    storage = tree_root(path)
    if storage is None:
        return None
    msg_dir = storage / "message" / path.stem
    out = [msg_dir]
    for name in _listing(msg_dir):
        out.append(msg_dir / name)
        part_dir = storage / "part" / name[:-5]
        out.append(part_dir)
        out.extend(part_dir / p for p in _listing(part_dir))
    return out


def owner(path: Path) -> Path | None:
    """The source a changed member belongs to: a database's log, a tree's message or part file."""
    if path.name.endswith("-wal") and is_database(path.with_name(path.name[:-4])):
        return path.with_name(path.name[:-4])
    if path.suffix != ".json":
        return None
    kind, storage = path.parent.parent.name, path.parent.parent.parent
    if storage.name != "storage":
        return None
    if kind == "message":
        return session_file(storage, path.parent.name)
    if kind == "part":
        try:
            doc = json.loads(path.read_bytes())
        except (OSError, ValueError, RecursionError):
            return None
        sid = doc.get("sessionID") if isinstance(doc, dict) else None
        return session_file(storage, sid) if isinstance(sid, str) else None
    return None
