"""A harness's plugin folder, made whole in the data folder: the plugin's template plus the hook client.

Claude Code (``claude --plugin-dir``, or a marketplace) and Codex (``codex plugin
marketplace add``) take rematch's hooks as a plugin folder: a manifest,
``hooks/hooks.json`` and ``bin/`` with the launcher ``rematch-hook`` and the fast
client ``rematch_hook.py``. The client is one file, kept in the core beside this
module; a harness plugin ships its folder without it (the template), and
:func:`made_whole` writes template and client to ``<data>/harness-plugins/<name>``.
A copy, not a link: Codex drops symbolic links when it copies a plugin into its
cache, and a folder that points into a Python environment would break with it.

The folder is rewritten only when its bytes differ from what this installation
ships (after an upgrade), and a rewrite is built beside it and swapped in by two
renames, so a harness reading it sees the old folder or the new, never half of
one (between the two renames, for an instant, none). The data
folder is the one the folder's hooks write to: ``$REMATCH_HOME``, else the
platform's user data folder (the hooks' commands name no ``--data``).

Nothing is written through a link: ``harness-plugins/`` and the plugin's folder
must be real folders (or absent); a symbolic link at either (another process
of the user pointing it elsewhere) is refused with :class:`LinkedFolder`, before
anything is written, and checked again after the swap.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

from rematch_trace.live.install import HOOK_CLIENT, hook_client
from rematch_trace.store.location import data_dir

#: The data folder's sub-folder that holds the plugin folders.
FOLDERS = "harness-plugins"
#: Where the client goes inside a plugin folder (the launcher ``bin/rematch-hook`` runs it from there).
CLIENT_IN_FOLDER = f"bin/{HOOK_CLIENT}"


class LinkedFolder(OSError):
    """``harness-plugins/`` or a plugin folder in it is a symbolic link (or not a folder): nothing is written."""


def _not_linked(*paths: Path) -> None:
    """:class:`LinkedFolder` when any of ``paths`` exists as a link or as something other than a folder."""
    for path in paths:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            raise LinkedFolder(f"{path} is a symbolic link: rematch writes no plugin folder through it "
                               "(remove the link; the folder is made in the data folder)")
        if not stat.S_ISDIR(st.st_mode):
            raise LinkedFolder(f"{path} is not a folder: remove it")


def made_whole(template: Path, name: str, data: Path | None = None) -> Path:
    """``<data>/harness-plugins/<name>``: ``template``'s files and the hook client, as this installation ships them.

    ``data`` defaults to the folder the hooks write to (``$REMATCH_HOME``, else the platform's).
    """
    # Absolute: the path is handed to a harness, which may resolve it from another folder.
    folder = (data if data is not None else data_dir()).expanduser().absolute()
    root = folder / FOLDERS
    target = root / name
    _not_linked(root, target)
    wanted = _wanted(template)
    if _holds(target, wanted):
        return target
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # a data folder made here is private too
    root.mkdir(mode=0o700, exist_ok=True)
    _not_linked(root, target)  # (made by another process between the first look and the mkdir)
    built = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
    try:
        for rel, (data_bytes, mode) in wanted.items():
            path = built / rel
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            path.write_bytes(data_bytes)
            os.chmod(path, mode)
        _swap(built, target)
    finally:
        shutil.rmtree(built, ignore_errors=True)  # gone already unless the swap failed
    _not_linked(root, target)
    if not _holds(target, wanted):  # another process swapped in a different folder meanwhile
        raise OSError(f"{target}: another rematch wrote a different plugin folder; run again")
    return target


def _wanted(template: Path) -> dict[str, tuple[bytes, int]]:
    """Each file of the made-whole folder (relative POSIX path) with its bytes and mode."""
    files: dict[str, tuple[bytes, int]] = {}
    for path in sorted(template.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            files[path.relative_to(template).as_posix()] = (path.read_bytes(), _mode(path))
    # The core's client, always: a template's own copy (an installation built over an older one can
    # keep it) is never the one handed to a harness.
    files[CLIENT_IN_FOLDER] = (hook_client().read_bytes(), 0o600)
    return files


def _mode(path: Path) -> int:
    """Owner-only: executable for the launcher (as shipped), readable for the rest."""
    return 0o700 if path.stat().st_mode & 0o100 else 0o600


def _holds(target: Path, wanted: dict[str, tuple[bytes, int]]) -> bool:
    """Whether ``target`` holds exactly ``wanted``'s files, bytes and modes."""
    try:
        present = {p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()}
        if present != set(wanted):
            return False
        for rel, (data_bytes, mode) in wanted.items():
            path = target / rel
            if (path.stat().st_mode & 0o777) != mode or path.read_bytes() != data_bytes:
                return False
    except OSError:
        return False
    return True


def _swap(built: Path, target: Path) -> None:
    """Put ``built`` at ``target``: a folder cannot be renamed over a non-empty one, so the
    old one steps aside first (under a hidden name, then removed)."""
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
        os.rename(target, old / target.name)
    try:
        os.rename(built, target)
    except OSError:
        pass  # another process put its folder there first: the check after the swap reads it
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


__all__ = ["CLIENT_IN_FOLDER", "FOLDERS", "LinkedFolder", "made_whole"]
