"""The report's search index: the redacted text of ``search.sqlite``, shipped with the site as script files.

A page opened from ``file://`` cannot ``fetch()`` a JSON file, but it may load a ``<script src>`` of its
own folder (the pages' CSP allows ``'self'``). So the index is written as ``search/NNNN.js`` files, each a
call ``rematchSearch("...")`` with the base64 of the deflated JSON list of sessions' entries (``[key, session
id, records, stamp]``, a record ``[seq, kind, time, text]``; the page inflates it with the browser's
``DecompressionStream``: a fifth of the bytes), and the index page loads them when its search box is
first used. The text is what ``rematch search`` indexes (:mod:`rematch_trace.store.search_index`: prompts,
assistant text, tool inputs, blocked calls, marks; redacted, also for a trace imported with
``--no-redact``), read from the data folder's index, never from a trace or a transcript.

Bounded: each record's text is cut to :data:`CLIP` characters (whitespace runs as one space), each file
holds about :data:`SHARD_BYTES`, and the whole index at most ``cap`` bytes (:data:`CAP_BYTES`): the newest
sessions first, the page says how many of the sessions it covers. docs/search.md has the sizes measured.
"""

from __future__ import annotations

import base64
import binascii
import re
import sqlite3
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from rematch_trace.report.text import visible
from rematch_trace.store.datafolder import DataDir, clean_temporaries, write_atomic

#: The folder of the report the index's files go in.
FOLDER = "search"
#: Characters of a record's text kept (the rest is not searchable from the page).
CLIP = 600
#: About how many bytes one file holds (a file is loaded whole; many small files load in parallel).
SHARD_BYTES = 2 * 1024 * 1024
#: The whole index at most (the newest sessions first): what a browser tab holds in memory at ease.
CAP_BYTES = 48 * 1024 * 1024
_SHARD = re.compile(r"\d{4}\.js")
_OPEN, _CLOSE = b'rematchSearch("', b'");\n'
#: zlib's level of a file (written when a session changed; read back by a refresh).
LEVEL = 6
#: Part of each session's mark in the files: a change of what a session's entry holds makes it read again.
FORMAT = f"2/{CLIP}"


def _records(db: sqlite3.Connection, key: str) -> list[list[Any]]:
    """``[seq, kind, time, text]`` of each indexed record of the trace ``key``, in trace order; the text on
    one line, clipped, its hidden characters (bidi controls, zero-width, lone surrogates) escaped as the
    pages show them."""
    out: list[list[Any]] = []
    # Only a head of each text is read: whitespace runs are folded after, so 4x what is kept is plenty.
    rows = db.execute("SELECT x.seq, x.kind, x.t, substr(x.body, 1, ?) FROM spans s JOIN text x ON x.rowid = s.id "
                      "WHERE s.key = ? ORDER BY s.off", (4 * CLIP, key))
    for seq, kind, t, body in rows:
        text = visible(" ".join((body or "").split())[:CLIP])
        if text:
            out.append([seq, kind, t, text])
    return out


def _shard(sessions: list[bytes]) -> bytes:
    # Base64 in a string: nothing of the text can end it (a file loaded by <script src> has no "</script>"
    # to fear either).
    return _OPEN + base64.b64encode(zlib.compress(b"[" + b",".join(sessions) + b"]", LEVEL)) + _CLOSE


def shard_entries(blob: bytes) -> list[Any]:
    """The session entries of a file's bytes (:func:`_shard`'s); ``ValueError`` when they are not one."""
    if not (blob.startswith(_OPEN) and blob.endswith(_CLOSE)):
        raise ValueError("not a search file")
    try:
        got = orjson.loads(zlib.decompress(base64.b64decode(blob[len(_OPEN):-len(_CLOSE)], validate=True)))
    except (zlib.error, binascii.Error, orjson.JSONDecodeError) as err:
        raise ValueError(f"not a search file: {err}") from None
    if not isinstance(got, list):
        raise ValueError("not a search file")
    return got


def _remove_others(folder: Path, names: list[str]) -> None:
    """Remove the index files of ``folder`` not in ``names`` (those of an earlier, larger index)."""
    for p in folder.iterdir():
        if _SHARD.fullmatch(p.name) and p.name not in names:
            p.unlink()


def _previous(folder: Path) -> dict[str, tuple[str, list[Any]]]:
    """Key -> (stamp, entry) of each session the folder's index files hold (what a refresh reuses)."""
    out: dict[str, tuple[str, list[Any]]] = {}
    for p in sorted(folder.iterdir()):
        if not _SHARD.fullmatch(p.name) or p.is_symlink():
            continue
        try:
            entries = shard_entries(p.read_bytes())
        except (OSError, ValueError):
            continue
        for e in entries:
            if isinstance(e, list) and len(e) == 4 and isinstance(e[0], str) and isinstance(e[3], str):
                out[e[0]] = (e[3], e)
    return out


def write_index(data: DataDir, out: Path, keys: Iterable[tuple[str, str]], *,
                cap: int = CAP_BYTES) -> dict[str, Any] | None:
    """Write the search files of the sessions ``keys`` (``(key, stamp)``, newest first) into
    ``out/search``, from the data folder's search index (brought up to date first when the folder can be
    written); return what the index page needs to load them, or ``None`` when there is no index to read
    (the page says so).

    A session whose stamp (the report's: ledger row, trace and events files, prices) is the one the
    folder's files hold is taken from them, not read again. A file whose bytes did not change is not
    rewritten; files of an earlier, larger index are removed.
    """
    from rematch_trace.store.search_index import SearchIndex, index_path, sync_data

    wanted = list(keys)
    folder = out / FOLDER
    folder.mkdir(mode=0o700, exist_ok=True)
    if folder.is_symlink() or not folder.is_dir():
        raise OSError(f"{folder} is a symbolic link or not a folder; refusing to write through it")
    clean_temporaries(folder)  # what a killed build left beside its targets
    sync_data(data)  # None when the folder is read-only: an existing index is read as it is
    path = index_path(data)
    if not path.is_file():
        _remove_others(folder, [])
        return None
    before = _previous(folder)
    shards: list[bytes] = []
    current: list[bytes] = []
    size = total = covered = records = 0
    try:
        with SearchIndex(path, readonly=True) as index:
            ids = dict(index.db.execute("SELECT key, session_id FROM traces"))
            for key, stamp in wanted:
                mark = f"{FORMAT}:{stamp}"
                old = before.get(key)
                if stamp and old is not None and old[0] == mark:
                    entry = old[1]
                else:
                    entry = [key, visible(ids.get(key) or ""), _records(index.db, key), mark]
                recs = entry[2]
                blob = orjson.dumps(entry)
                if total + len(blob) > cap:
                    break  # the older sessions are left out; the page says how many it covers
                if current and size + len(blob) > SHARD_BYTES:
                    shards.append(_shard(current))
                    current, size = [], 0
                current.append(blob)
                size += len(blob)
                total += len(blob)
                covered += 1
                records += len(recs)
    except sqlite3.Error:
        _remove_others(folder, [])
        return None
    if current:
        shards.append(_shard(current))
    names = [f"{i:04d}.js" for i in range(len(shards))]
    for name, blob in zip(names, shards, strict=True):
        target = folder / name
        try:
            if not target.is_symlink() and target.read_bytes() == blob:
                continue
        except OSError:
            pass
        write_atomic(target, blob)
    _remove_others(folder, names)
    return {"files": names, "sessions": covered, "of": len(wanted), "records": records, "bytes": total,
            "clip": CLIP}
