"""Sources on any file system: local paths, and fsspec URLs (``s3://``, ``memory://``...).

The core opens every transcript through :func:`open_raw` (the shared reader,
change detection, the plugin host's head read), so a plugin reads an object
store's file exactly as it reads a local one. ``file://`` URLs become local
paths at once (:func:`local_path`): they are local files, with everything a
local file offers (stat, seek, atomic replace).

A :class:`~rematch_trace.host.source.Source` carries its file as a
:class:`~pathlib.Path`, which folds a URL's ``//`` into ``/``:
``Path("s3://b/k")`` is the relative path ``s3:/b/k``. Local sources are always
absolute (discovery makes them so), so a relative path whose first part is a
scheme is a URL, and :func:`url_of` gives it back whole.

fsspec is imported only when a URL is met (the ``dask`` extra installs it).
"""

from __future__ import annotations

import datetime
import io
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote, urlsplit

from rematch_trace.errors import RematchError

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+)://")
# What Path() makes of a URL: "scheme:/rest" (relative; the "//" folded).
_FOLDED = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):/(?!/)(.*)$", re.DOTALL)
# A large buffer: with the default 8 KiB, readline re-joins every longer line from pieces.
_READ_BUFFER = 1024 * 1024
#: The file endings of the transcripts the core reads itself (plain, zstd and gzip JSONL); plugins add
#: theirs (``transcript_suffixes``).
SUFFIXES = (".jsonl", ".jsonl.zst", ".jsonl.gz")


def is_url(text: str | os.PathLike[str]) -> bool:
    """Whether ``text`` names a file by URL (``scheme://...``), ``file://`` included."""
    return _URL.match(os.fspath(text)) is not None


def local_path(text: str) -> str:
    """``text`` with a ``file://`` URL turned into the local path it names; anything else as it is.

    Raises :class:`RematchError` for a ``file://`` URL naming another host.
    """
    m = _URL.match(text)
    if m is None or m.group(1).lower() != "file":
        return text
    parts = urlsplit(text)
    if parts.netloc not in ("", "localhost"):
        raise RematchError(f"{text}: a file:// URL must name a local path (file:///...)")
    return unquote(parts.path) or "/"


def url_of(path: str | os.PathLike[str]) -> str | None:
    """The fsspec URL ``path`` stands for (a URL string, or a Path made of one); ``None`` when local."""
    text = os.fspath(path)
    if text[:1] == "/":
        return None  # a local absolute path (no scheme starts with "/"): asked several times per file
    m = _URL.match(text)
    if m is not None:
        return None if m.group(1).lower() == "file" else text
    if os.path.isabs(text):
        return None
    folded = _FOLDED.match(text)
    if folded is None:
        return None
    return f"{folded.group(1)}://{folded.group(2)}"


def source_name(path: str | os.PathLike[str]) -> str:
    """How the ledger names a source: its URL, or its local path."""
    return url_of(path) or os.fspath(path)


def _fs(url: str) -> tuple[Any, str]:
    try:
        import fsspec
    except ImportError:
        raise RematchError(f"{url}: reading URLs needs the Python package fsspec: install rematch again "
                          "from its checkout (pip install ./), or pip install fsspec") from None
    try:
        fs, inner = fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as err:
        # An unknown protocol, or one whose package is missing (s3fs, gcsfs...).
        raise RematchError(f"{url}: {err}") from None
    return fs, str(inner)


def _as_url(protocol: Any, path: str) -> str:
    scheme = protocol[0] if isinstance(protocol, (tuple, list)) else str(protocol)
    return f"{scheme}://{path.lstrip('/')}"


def open_raw(path: str | os.PathLike[str]) -> IO[bytes]:
    """The bytes of a transcript file, local or at an fsspec URL, buffered and seekable.

    Raises :class:`OSError` when it cannot be opened (a missing object included),
    :class:`RematchError` when its file system is not available.
    """
    url = url_of(path)
    if url is None:
        return open(path, "rb", buffering=_READ_BUFFER)  # the caller closes it
    fs, inner = _fs(url)
    try:
        f = fs.open(inner, "rb")
    except OSError:
        raise
    except Exception as err:  # a remote store's own errors: one unreadable file, not a crash
        raise OSError(f"{url}: {type(err).__name__}: {err}") from None
    if isinstance(f, io.BufferedReader):
        return f
    # A buffered view gives what the line reader uses (peek, readline with a limit).
    return io.BufferedReader(f, _READ_BUFFER)


def read_spans(path: str | os.PathLike[str], spans: list[tuple[int, int]]) -> list[bytes]:
    """The bytes of each ``(start, length)`` span of a file, local or at an fsspec URL; one open.

    A local file is read with ``pread`` alone: :func:`open_raw`'s large buffer
    would read up to a MiB to return a head of a few KiB, and this runs for
    every file a rerun continues (claiming it, checking its fingerprints).
    Raises :class:`OSError` or :class:`RematchError` as :func:`open_raw` does.
    """
    if url_of(path) is not None:
        with open_raw(path) as f:
            out = []
            for start, length in spans:
                f.seek(start)
                out.append(f.read(length))
            return out
    fd = os.open(path, os.O_RDONLY)
    try:
        return [_pread_all(fd, length, start) for start, length in spans]
    finally:
        os.close(fd)


def _pread_all(fd: int, length: int, start: int) -> bytes:
    """``length`` bytes at ``start`` (fewer at the end of the file)."""
    data = os.pread(fd, length, start) if length > 0 else b""
    while 0 < len(data) < length:  # a short read before the end (seldom: a signal, a network file system)
        more = os.pread(fd, length - len(data), start + len(data))
        if not more:
            break
        data += more
    return data


def stat_of(path: str | os.PathLike[str]) -> tuple[int, int, bool]:
    """``(size, mtime_ns, is a regular file)`` of a local path or a URL; raises :class:`OSError`.

    A store that keeps no modification time gives ``-1``: its files are then
    told apart by size and fingerprint only (see ``docs/distributed.md``).
    """
    url = url_of(path)
    if url is None:
        import stat

        st = os.stat(path)
        return st.st_size, st.st_mtime_ns, stat.S_ISREG(st.st_mode)
    fs, inner = _fs(url)
    try:
        info = fs.info(inner)
    except OSError:
        raise
    except Exception as err:
        raise OSError(f"{url}: {type(err).__name__}: {err}") from None
    return int(info.get("size") or 0), _mtime_ns(info), info.get("type") == "file"


def _mtime_ns(info: dict[str, Any]) -> int:
    # Each store names it differently: local and sftp "mtime", s3 "LastModified",
    # gcs "updated", memory "created".
    for key in ("mtime", "LastModified", "last_modified", "updated", "modified", "created"):
        value = info.get(key)
        if value is None:
            continue
        if isinstance(value, datetime.datetime):
            return int(value.timestamp() * 1e9)
        if isinstance(value, (int, float)):
            return int(value * 1e9)
        if isinstance(value, str):
            try:
                return int(datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1e9)
            except ValueError:
                continue
    return -1


def exists(path: str | os.PathLike[str]) -> bool:
    """Whether a local path (links included) or a URL names something."""
    url = url_of(path)
    if url is None:
        return os.path.lexists(path)
    fs, inner = _fs(url)
    try:
        return bool(fs.exists(inner))
    except Exception:
        return False


def walk_url(url: str, suffixes: tuple[str, ...]) -> Iterator[str]:
    """The transcript-like files at or under ``url``, as URLs, in sorted order."""
    fs, inner = _fs(url)
    try:
        if not fs.isdir(inner):
            yield url
            return
        found = sorted(str(p) for p in fs.find(inner, detail=False))
    except Exception as err:
        raise RematchError(f"{url}: cannot list: {type(err).__name__}: {err}") from None
    for p in found:
        if p.endswith(suffixes):
            yield _as_url(fs.protocol, p)


def local_data_folder(text: str) -> Path:
    """The data folder ``text`` names, which must be local (a ``file://`` URL is).

    Raises :class:`RematchError` for any other URL: the data folder relies on
    atomic rename, in-place truncation, ``fcntl`` locks and SQLite, which object
    stores do not offer.
    """
    local = local_path(text)
    if is_url(local):
        scheme = _URL.match(local).group(1)  # type: ignore[union-attr]
        raise RematchError(
            f"{text}: the data folder must be on a local or shared POSIX file system (a path or file:// URL); "
            f"{scheme}:// offers no atomic replace, file lock or SQLite, which its guarantees rest on"
        )
    return Path(local)


def open_gzip(path: str | os.PathLike[str]) -> IO[bytes]:
    """The decompressed bytes of a gzip file, local or at a URL; closing it closes the file."""
    import gzip

    raw = open_raw(path)
    stream = gzip.GzipFile(fileobj=raw, mode="rb")
    # GzipFile closes only a file it opened itself: hand it this one to close.
    stream.myfileobj = raw  # type: ignore[assignment]
    return stream  # type: ignore[return-value]
