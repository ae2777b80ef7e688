"""Where the live service's sockets live, and how a client finds them.

Both sides compute the same place from the data folder, with no discovery
file to trust: the folder ``run/`` inside the data folder (``--out``, else
``$REMATCH_HOME``, else the platform's user data folder), private (0700),
holding ``events.sock`` (requests from adapters), ``control.sock``
(approvals) and ``serve.lock`` (one service per folder). The default data
folder is per user, so by default there is one service per user.

A Unix socket path is limited to ~107 bytes. When ``run/events.sock`` would
be longer, the folder is ``rematch-<uid>-<16 hex of the data folder's
SHA-256>`` in ``$XDG_RUNTIME_DIR`` (else the temporary folder) instead. In a
shared folder (``/tmp``) another user can make that name first: such a name is
passed over for the next of :func:`runtime_candidates` (``...-1``, ``...-2``,
up to :data:`CANDIDATES` names), and the hook client walks the same list, so
both sides settle on the first name that is free or a folder of ours. A folder
of someone else's, or a link, is never used; with every name taken the service
refuses to start and names each one and its owner.

Standard library only, like the codec (the hook imports it).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from rematch_trace.store.location import data_dir

#: Longest socket path used as it is (sun_path holds 108 bytes with its NUL).
MAX_SOCKET_PATH = 100


def data_folder(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The data folder (:func:`rematch_trace.store.location.data_dir`)."""
    return data_dir(explicit)


#: How many names of the runtime folder are tried before the service gives up (each taken by another user).
CANDIDATES = 8


def _inside(data: Path) -> Path | None:
    """``<data>/run`` when its socket paths fit, else ``None`` (the runtime folder is used)."""
    inside = data / "run"
    # Judged on the absolute path, so a client given a relative folder decides as the service does.
    return inside if len(os.fsencode(os.path.abspath(inside / "control.sock"))) <= MAX_SOCKET_PATH else None


def runtime_candidates(data: Path) -> list[Path]:
    """The names the runtime folder of ``data`` may have, in the order both sides try them: ``rematch-<uid>-<16
    hex>`` in ``$XDG_RUNTIME_DIR`` (else the temporary folder), then the same with ``-1`` ... ``-7``."""
    import hashlib  # only for long folder paths: the usual case imports neither
    import tempfile

    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    stem = f"rematch-{os.getuid()}-{hashlib.sha256(os.fsencode(data.resolve())).hexdigest()[:16]}"
    return [Path(base) / (stem if i == 0 else f"{stem}-{i}") for i in range(CANDIDATES)]


def _taken(path: Path) -> str | None:
    """Why ``path`` cannot be the service's folder (another user's, a link, not a folder), or ``None``: it
    is free, or a folder of ours."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as err:
        return f"cannot be looked at ({err.strerror or err})"
    if not stat.S_ISDIR(st.st_mode):
        return "is a link or a file, not a folder"
    if st.st_uid != os.getuid():
        return f"belongs to uid {st.st_uid}"
    return None


def run_dir(data: Path) -> Path:
    """The private folder of the service of data folder ``data`` (see the module docstring).

    In the runtime folder: the first of :func:`runtime_candidates` that is free or a folder of ours (the
    first when all are taken: a client finds no service there, and the service refuses to start).
    """
    inside = _inside(data)
    if inside is not None:
        return inside
    names = runtime_candidates(data)
    return next((p for p in names if _taken(p) is None), names[0])


def make_run_dir(data: Path) -> Path:
    """Make (or check) the service's private folder of ``data`` and return it: :func:`run_dir`, made 0700
    where it is free; a name another user made first in the meantime is passed over as :func:`run_dir` does.

    :raises PermissionError: no name is usable; the message says where it looked and why each was refused.
    """
    inside = _inside(data)
    if inside is not None:
        ensure_private_dir(inside)
        return inside
    refused = []
    for path in runtime_candidates(data):
        why = _taken(path)
        if why is None:
            try:
                ensure_private_dir(path)
                return path
            except PermissionError:  # made by someone else between the look and the mkdir
                why = _taken(path) or "was taken while this service made it"
        refused.append(f"{path} {why}")
    raise PermissionError(
        "no private folder for the sockets (the data folder's path is too long for run/ inside it): "
        + "; ".join(refused) + ". Set XDG_RUNTIME_DIR to a folder only you can write, or use a shorter data folder path"
    )


def events_socket(data: Path) -> Path:
    """The event channel's socket: adapters send v2 requests here."""
    return run_dir(data) / "events.sock"


def control_socket(data: Path) -> Path:
    """The control channel's socket: approvals are listed and decided here, and only here."""
    return run_dir(data) / "control.sock"


def log_file(data: Path) -> Path:
    """The data folder's log of the live path (one line per event; never host input)."""
    return data / "live.log"


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` 0700, or check an existing one is a real folder of ours and make it 0700.

    :raises PermissionError: it is a symbolic link, not a folder, or another user's.
    """
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise PermissionError(f"{path} is not a folder (a link or a file); refusing to use it")
    if st.st_uid != os.getuid():
        raise PermissionError(f"{path} belongs to uid {st.st_uid}, not to this user; refusing to use it")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)


def append_log(data: Path, line: str) -> None:
    """Append one line to the live log (0600), starting a new one past 1 MiB; never raises."""
    path = log_file(data)
    try:
        data.mkdir(mode=0o700, parents=True, exist_ok=True)
        if path.stat().st_size > 1 << 20:
            os.replace(path, path.with_name(path.name + ".1"))
    except OSError:
        pass
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError:
        return
    try:
        os.write(fd, (line.replace("\n", " ")[:1000] + "\n").encode("utf-8", "replace"))
    except OSError:
        pass
    finally:
        os.close(fd)


__all__ = [
    "CANDIDATES",
    "append_log",
    "control_socket",
    "data_folder",
    "ensure_private_dir",
    "events_socket",
    "log_file",
    "make_run_dir",
    "run_dir",
    "runtime_candidates",
]
